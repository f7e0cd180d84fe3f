# pd-quant against onnxruntime's quantize_static on torchvision's ImageNet models as users export them
# (bench/tv_export.py): the same .onnx file, imported by pd-convert and quantized by pd-quant with its
# defaults (QDQ, u8 activations by percentile 99.99, s8 weights per output channel), and quantized by
# onnxruntime with the same settings (quant_pre_process, then quantize_static), both calibrated on the
# same SAMPLES inputs. The weights are random, so there is no accuracy to measure: each int8 model is
# scored against its own f32 model on EVAL other inputs (top-1 agreement, and the logits' relative L2
# error), and the inputs are normal(0, 1) images, as a normalised ImageNet batch roughly is. Then
# latency at each batch, 2 threads by default, f32 and int8 of both runtimes in alternating rounds
# (median of the rounds' p50s; fresh onnxruntime sessions each round).
#   usage: PY bench/zoo_quant.py [--models resnet18 resnet50] [--batches 1 8] [--threads 2] [--rounds 3]
#                                [--samples 64] [--eval 32]
#   (PY: a python with torch, torchvision, onnx, onnxruntime: ../shared/peers/torch2_venv.sh makes one)
import argparse, gc, json, os, statistics, subprocess, sys, tempfile

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
TOOLS = os.path.join(ROOT, "build", "tools")
sys.path.insert(0, BENCH)
from ort_quant import quantize, session  # noqa: E402  (bench/quant.sh's peer: the same quantize_static settings)
from peer_infer import time_calls  # noqa: E402
from tv_export import export  # noqa: E402


def tool(name, *args):
    return subprocess.run([os.path.join(TOOLS, name), *map(str, args)], check=True, capture_output=True, text=True).stdout


def pd_logits(model, x_path, out_dir, threads):
    tool("pd-infer", model, "-i", f"input={x_path}", "-o", out_dir, "--threads", threads, "--warmup", 0, "--repeat", 1)
    return np.load(os.path.join(out_dir, "logits.npy"))


def fidelity(f32, int8):
    """Top-1 agreement of int8 with f32, and ||int8 - f32|| / ||f32|| over all logits."""
    agree = float((f32.argmax(1) == int8.argmax(1)).mean())
    return agree, float(np.linalg.norm(int8 - f32) / np.linalg.norm(f32))


def pd_p50(model, batch, threads):
    warmup, repeat = (10, 100) if batch == 1 else (3, 20)
    out = tool("pd-infer", model, "-b", batch, "--threads", threads, "--warmup", warmup, "--repeat", repeat, "--json")
    return json.loads(out)["latency_ms"]["p50"]


def ort_p50(path, batch, threads):
    sess = session(path, threads)
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224), dtype=np.float32)
    warmup, repeat = (10, 100) if batch == 1 else (3, 20)
    ms = float(np.median(time_calls(lambda: sess.run(None, {"input": x}), warmup, repeat)))
    del sess
    gc.collect()
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--eval", type=int, default=32)
    args = ap.parse_args()
    import onnxruntime as ort
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"CPU: {cpu}; {args.threads} threads; onnxruntime {ort.__version__}; {args.samples} calibration inputs, "
          f"{args.eval} others scored; {args.rounds} alternating rounds")
    print("| model | runtime | top-1 agreement with f32 | logits' rel. error | " +
          " | ".join(f"f32 / int8 ms at batch {b} (speedup)" for b in args.batches) + " |")
    print("|---|---|---|---|" + "---|" * len(args.batches))
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        calib = rng.standard_normal((args.samples, 3, 224, 224), dtype=np.float32)
        held = rng.standard_normal((args.eval, 3, 224, 224), dtype=np.float32)
        calib_x, held_x = os.path.join(tmp, "calib.npy"), os.path.join(tmp, "held.npy")
        np.save(calib_x, calib)
        np.save(held_x, held)
        np.save(os.path.join(tmp, "labels.npy"), np.zeros(args.samples, dtype=np.int64))
        spec = os.path.join(tmp, "calib.yaml")
        with open(spec, "w") as f:
            f.write(f"data:\n  test:\n    format: npy\n    features: {calib_x}\n    labels: {os.path.join(tmp, 'labels.npy')}\n")
        for name in args.models:
            onnx_f32, onnx_int8 = os.path.join(tmp, f"{name}.onnx"), os.path.join(tmp, f"{name}_int8.onnx")
            pd_f32, pd_int8 = os.path.join(tmp, f"{name}.pdmodel"), os.path.join(tmp, f"{name}_int8.pdmodel")
            export(name, onnx_f32)
            tool("pd-convert", onnx_f32, pd_f32)
            tool("pd-quant", pd_f32, pd_int8, "--calib", spec, "--samples", args.samples, "--batch", 16, "--threads", args.threads)
            settings = argparse.Namespace(method="percentile", percentile=99.99, batch=16)
            quantize(onnx_f32, onnx_int8, calib, "input", settings, tmp)
            ref = {"pd": pd_logits(pd_f32, held_x, os.path.join(tmp, "f"), args.threads),
                   "ort": session(onnx_f32, args.threads).run(None, {"input": held})[0]}
            low = {"pd": pd_logits(pd_int8, held_x, os.path.join(tmp, "q"), args.threads),
                   "ort": session(onnx_int8, args.threads).run(None, {"input": held})[0]}
            times = {(rt, kind, b): [] for rt in ("pd", "ort") for kind in ("f32", "int8") for b in args.batches}
            for _ in range(args.rounds):
                for b in args.batches:
                    times[("pd", "f32", b)].append(pd_p50(pd_f32, b, args.threads))
                    times[("pd", "int8", b)].append(pd_p50(pd_int8, b, args.threads))
                    times[("ort", "f32", b)].append(ort_p50(onnx_f32, b, args.threads))
                    times[("ort", "int8", b)].append(ort_p50(onnx_int8, b, args.threads))
            for rt, label in (("pd", "pd-quant + pd-infer"), ("ort", "quantize_static + onnxruntime")):
                agree, err = fidelity(ref[rt], low[rt])
                cells = []
                for b in args.batches:
                    f, q = statistics.median(times[(rt, "f32", b)]), statistics.median(times[(rt, "int8", b)])
                    cells.append(f"{f:.4g} / {q:.4g} ({f / q:.2f}x)")
                print(f"| {name} | {label} | {agree:.3f} | {err:.4f} | " + " | ".join(cells) + " |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
