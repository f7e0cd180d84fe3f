# Peer for bench/quant.sh: onnxruntime's own post-training quantizer on the same trained model, so that
# pd-quant can be compared side by side with quantize_static. The run's model.pdmodel is exported to
# ONNX by pd-convert, then quantized by onnxruntime as pd-quant does by default: QDQ form, u8
# activations calibrated by percentile on the first 512 samples of the config's data.test (batches of
# 64, the config's transforms), s8 weights per output channel. Prints the test accuracy of the ORT f32
# and int8 models on the full test set, their file sizes and ORT latency at batch 1 and 64, timed as
# quant.sh times pd-infer (warmup 20, repeat 200; at batch 1 100 and 2000, a few ms a round otherwise;
# rounds in alternation, median of each round's p50).
#   usage: ORT_PY bench/ort_quant.py RUN_DIR [THREADS] [ROUNDS] [--pd-convert PATH] [--method percentile|minmax]
#                                    [--percentile 99.99] [--samples 512] [--batch 64] [--accuracy-only]
#                                    [--write-int8 PATH] [--pd-int8 MODEL [--pd-infer PATH]]
# With --pd-int8 (pd-quant's model of the same run), both int8 models are also scored against the f32
# model's own logits on the test set: top-1 agreement (ties scored fairly) and the logits' SQNR (10 log10 of |f32|^2 over
# |int8 - f32|^2). On a test set where a few samples in 10,000 separate two quantizers' accuracies,
# that is the quantization error itself, without the test labels' noise.
# RUN_DIR holds model.pdmodel and config.yaml (from pd-train); PATH defaults to $PD_CONVERT, else
# build/tools/pd-convert. Needs numpy, onnx and onnxruntime (plus sympy for quant_pre_process).
import argparse, contextlib, gc, io, json, os, shutil, statistics, subprocess, sys, tempfile
import numpy as np

from fmnist_data import idx
from peer_infer import time_calls

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- data: the config's test set, preprocessed as pd-quant / pd-infer do (tools/common/test_set.cc) ----

def load_yaml(path):
    try:
        import yaml
    except ImportError:  # the peer venvs lack PyYAML; Debian's python3 (which quant.sh uses) has it
        code = "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)"
        return json.loads(subprocess.run(["python3", "-c", code, path], check=True, capture_output=True,
                                         text=True).stdout)
    with open(path) as f:
        return yaml.safe_load(f)


def affine(transforms, channels):
    """The per-channel x * a + b that the data loader folds its leading scale / normalize into (a and b
    computed in double, applied in f32). random_flip / random_crop are training-only and skipped."""
    a, b = np.ones(channels), np.zeros(channels)
    for t in transforms:
        (kind, v), = t.items()
        if kind == "scale":
            a, b = a * v, b * v
        elif kind == "normalize":
            mean, std = np.broadcast_to(v["mean"], channels), np.broadcast_to(v["std"], channels)
            a, b = a / std, (b - mean) / std
        elif kind not in ("random_flip", "random_crop"):
            sys.exit(f"ort_quant: unknown transform '{kind}' (expected scale or normalize)")
    return a.astype(np.float32), b.astype(np.float32)


def test_set(config, sample_shape, limit=0):
    """Features f32 [N, *sample_shape] and labels i64 [N]: the first `limit` samples (0: the source's own
    limit, else all), as the tools read data.test."""
    data = config.get("data", config)
    src = data["test"]
    fmt = src.get("format", "idx")
    if fmt not in ("idx", "npy"):
        sys.exit(f"ort_quant: data.test format '{fmt}' is not supported here (idx or npy)")
    read = idx if fmt == "idx" else np.load
    x, y = read(src["features"]), read(src["labels"])
    keep = limit or src.get("limit", 0) or len(y)
    x = x[:keep].reshape(-1, *sample_shape)
    a, b = affine(data.get("transforms", []), sample_shape[0])
    per_channel = (1, -1) + (1,) * (len(sample_shape) - 1)
    return x.astype(np.float32) * a.reshape(per_channel) + b.reshape(per_channel), y[:keep].astype(np.int64)


def batches(x, size):
    return [x[i:i + size] for i in range(0, len(x), size)]


# ---- onnxruntime ----------------------------------------------------------------------------------------

def session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3  # errors only
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def quantize(f32_path, out_path, calib, input_name, args, tmp):
    from onnxruntime import quantization as q

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter({input_name: b} for b in batches(calib, args.batch))

        def get_next(self):
            return next(self.feeds, None)

    # onnxruntime's recommended first step: shape inference and its basic graph optimizations (a conv's
    # batch norm folded into it, as pd-quant folds it before calibrating).
    pre = os.path.join(tmp, "pre.onnx")
    q.quant_pre_process(f32_path, pre)
    method = {"percentile": q.CalibrationMethod.Percentile, "minmax": q.CalibrationMethod.MinMax}[args.method]
    # ORT's percentile calibration (its default symmetric=False: a histogram of x over [-max|x|, max|x|])
    # cuts (100 - P) / 2 % from each end, pd-quant's (100 - P)% from each; on the residual example both
    # gave the same scales to 2-3 digits (session 30), every activation's, P = 99.99.
    extra = {"CalibPercentile": args.percentile} if args.method == "percentile" else {}
    chatter = io.StringIO()  # the calibrators print progress on stdout, which carries the table
    try:
        with contextlib.redirect_stdout(chatter):
            q.quantize_static(pre, out_path, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                              activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                              calibrate_method=method, extra_options=extra)
    except Exception:
        sys.stderr.write(chatter.getvalue())
        raise


def ort_logits(path, x, threads):
    sess = session(path, threads)
    name = sess.get_inputs()[0].name
    return np.concatenate([sess.run(None, {name: b})[0] for b in batches(x, 500)])


def pd_logits(pd_infer, model, input_name, x, threads):
    """pd-infer's outputs for x (its only output: the logits), in chunks of 2500 samples through .npy files."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for b in batches(x, 2500):
            np.save(os.path.join(tmp, "x.npy"), np.ascontiguousarray(b))
            subprocess.run([pd_infer, model, "-i", f"{input_name}={tmp}/x.npy", "-o", os.path.join(tmp, "out"),
                            "--threads", str(threads)], check=True, stdout=subprocess.DEVNULL)
            names = sorted(os.listdir(os.path.join(tmp, "out")))
            if len(names) != 1:
                sys.exit(f"ort_quant: pd-infer wrote {names} for {model}; expected one output (the logits)")
            out.append(np.load(os.path.join(tmp, "out", names[0])))
    return np.concatenate(out)


def fidelity(logits, ref):
    """(top-1 agreement with the reference logits, ties scored fairly as in scores(); SQNR of the logits in dB)."""
    err = float(((logits - ref) ** 2).sum())
    sqnr = 10 * np.log10(float((ref ** 2).sum()) / err) if err > 0 else float("inf")
    return scores(logits, ref.argmax(1))[2], sqnr


def scores(logits, y):
    """Test accuracy as argmax scores it, the number of samples whose top logit is tied, and the accuracy
    with each tie scored at its expected value under a fair tie-break. onnxruntime's int8 model quantizes
    the logits too (u8 on a grid of ~0.05), so ties are common there, and argmax gives each to the lowest
    class index: on Fashion-MNIST that alone lifted accuracy by 3-10 samples in 10,000 (session 30)."""
    top = logits == logits.max(1, keepdims=True)
    tied = top.sum(1)
    fair = float((top[np.arange(len(y)), y] / tied).mean())
    return float((logits.argmax(1) == y).mean()), int((tied > 1).sum()), fair


def accuracy_cell(acc):
    argmax, ties, fair = acc
    return f"{argmax:.4f}" + (f" ({ties} ties; {fair:.4f} with a fair tie-break)" if ties else "")


def p50(path, x, threads):
    """Median latency in ms of one batch; a fresh session per round, dropped after it, so that its spinning
    thread pool does not compete with the next model's."""
    sess = session(path, threads)
    feed = {sess.get_inputs()[0].name: x}
    warmup, repeat = (100, 2000) if len(x) == 1 else (20, 200)  # quant.sh's counts
    ms = float(np.median(time_calls(lambda: sess.run(None, feed), warmup, repeat)))
    del sess
    gc.collect()
    return ms


def main():
    ap = argparse.ArgumentParser(description="onnxruntime quantize_static peer of bench/quant.sh")
    ap.add_argument("run", help="a pd-train run dir (model.pdmodel, config.yaml)")
    ap.add_argument("threads", nargs="?", type=int, default=2)
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--pd-convert", default=os.environ.get("PD_CONVERT", os.path.join(ROOT, "build/tools/pd-convert")))
    ap.add_argument("--method", choices=["percentile", "minmax"], default="percentile")
    ap.add_argument("--percentile", type=float, default=99.99)  # pd-quant's defaults from here on
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--accuracy-only", action="store_true", help="print the accuracies, time nothing")
    ap.add_argument("--write-int8", metavar="PATH", help="write the quantized ONNX model there and stop")
    ap.add_argument("--pd-int8", metavar="MODEL", help="pd-quant's model of the run: score both int8 models against f32")
    ap.add_argument("--pd-infer", default=os.environ.get("PD_INFER", os.path.join(ROOT, "build/tools/pd-infer")))
    args = ap.parse_args()
    import onnx, onnxruntime as ort

    config = load_yaml(os.path.join(args.run, "config.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        models = {"f32": os.path.join(tmp, "f32.onnx"), "int8": os.path.join(tmp, "int8.onnx")}
        subprocess.run([args.pd_convert, os.path.join(args.run, "model.pdmodel"), models["f32"]], check=True,
                       stdout=subprocess.DEVNULL)
        inp = onnx.load(models["f32"]).graph.input[0]
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim][1:]
        calib, _ = test_set(config, shape, args.samples)
        quantize(models["f32"], models["int8"], calib, inp.name, args, tmp)
        if args.write_int8:
            shutil.copyfile(models["int8"], args.write_int8)
            return
        qdq = onnx.load(models["int8"]).graph
        int8 = {i.name for i in qdq.initializer if i.data_type == onnx.TensorProto.INT8}
        weights = sum(n.op_type == "DequantizeLinear" and n.input[0] in int8 for n in qdq.node)
        print(f"onnxruntime {ort.__version__} quantize_static: {weights} weights s8 per channel, "
              f"{sum(n.op_type == 'QuantizeLinear' for n in qdq.node)} QuantizeLinear (u8, {args.method}), "
              f"QDQ, {len(calib)} calibration samples")

        x, y = test_set(config, shape)
        logits = {m: ort_logits(p, x, args.threads) for m, p in models.items()}
        acc = {m: scores(l, y) for m, l in logits.items()}
        fid = {}
        if args.pd_int8:
            pd = pd_logits(args.pd_infer, args.pd_int8, inp.name, x, args.threads)
            fid = {"onnxruntime": fidelity(logits["int8"], logits["f32"]), "pd-quant": fidelity(pd, logits["f32"])}
            fid_acc = scores(pd, y)[0]
        if args.accuracy_only:
            # MODEL ARGMAX TIES FAIR ..., then with --pd-int8: fidelity ORT_AGREE ORT_SQNR PD_AGREE PD_SQNR PD_ACC
            print(" ".join(f"{m} {a[0]:.4f} {a[1]} {a[2]:.4f}" for m, a in acc.items())
                  + ("" if not fid else " fidelity " + " ".join(f"{a:.4f} {q:.2f}" for a, q in fid.values()) + f" {fid_acc:.4f}"))
            return
        if fid:
            print("\n| int8 model | test acc | top-1 agreement with f32 | logits' SQNR against f32 |\n|---|---|---|---|")
            print(f"| pd-quant | {fid_acc:.4f} | {fid['pd-quant'][0]:.4f} | {fid['pd-quant'][1]:.2f} dB |")
            print(f"| onnxruntime quantize_static | {accuracy_cell(acc['int8'])} | {fid['onnxruntime'][0]:.4f} | "
                  f"{fid['onnxruntime'][1]:.2f} dB |")
        print(f"\n| run | batch | p50 ms (median of {args.rounds}) | speedup vs ORT f32 | test acc | model KiB |")
        print("|---|---|---|---|---|---|")
        names = {"f32": "onnxruntime f32", "int8": "onnxruntime int8 (quantize_static)"}
        for batch in (1, 64):
            xb = np.ascontiguousarray(x[:batch])
            p50s = {m: [] for m in models}
            for _ in range(args.rounds):
                for m, p in models.items():
                    p50s[m].append(p50(p, xb, args.threads))
            med = {m: statistics.median(v) for m, v in p50s.items()}
            for m, p in models.items():
                print(f"| {names[m]} | {batch} | {med[m]:.4g} | {med['f32'] / med[m]:.2f}x | {accuracy_cell(acc[m])} | "
                      f"{os.path.getsize(p) // 1024} |", flush=True)


if __name__ == "__main__":
    main()
