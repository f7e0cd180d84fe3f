# Peer baseline for pd-infer: inference latency of the example networks (examples/lenet_fmnist.yaml,
# examples/resnet_fmnist.yaml) in onnxruntime and in Paddle Inference, on random inputs.
# Both peers run the same architecture with the same seeded random weights (only latency matters, but
# sharing the weights lets us check that the two peers compute the same function). The model is given
# in inference form, batch_norm included: folding conv+bn is left to each peer's own graph optimizer
# (ORT_ENABLE_ALL; Paddle Inference IR passes), as pd-opt -O2 does for pd-infer.
# Each timed call hands the numpy input over and fetches the output as numpy (ORT: session.run;
# Paddle: copy_from_cpu, run, copy_to_cpu), so both include the handoff.
#   usage: python3 bench/peer_infer.py --arch lenet|resnet [--batch 1] [--threads 2] [--warmup 50]
#                                       [--repeat 500] [--runtime ort|paddle|both] [--seed 0]
#          python3 bench/peer_infer.py --onnx MODEL.onnx [--batch 1] ...   (onnxruntime on that model, e.g.
#                                       pd-convert's export of a trained ViT: the same graph and weights)
# Prints one JSON line per runtime: runtime, arch, batch, threads, p50_ms, min_ms, p90_ms, throughput
# (samples/s = batch / mean latency). Needs the pip packages onnx, onnxruntime and paddlepaddle.
import argparse, collections, gc, json, os, sys, tempfile, time, warnings
import numpy as np

EPS = 1e-5  # batch_norm epsilon, the model-YAML default

# ---- architectures: a layer list that mirrors the model YAML, shared by both builders ----------------

Layer = collections.namedtuple("Layer", "name type inputs attrs")


class Spec:
    """Layers in order; like the YAML, a layer reads the previous one unless it names its inputs."""

    def __init__(self):
        self.layers, self.prev = [], "image"

    def add(self, name, type, inputs=None, **attrs):
        self.layers.append(Layer(name, type, inputs or [self.prev], attrs))
        self.prev = name
        return self

    def conv(self, name, cin, cout, k, stride=1, pad=0, bias=True, input=None):
        return self.add(name, "conv", [input] if input else None, cin=cin, cout=cout, k=k,
                        stride=stride, pad=pad, bias=bias)


def lenet():
    s = Spec()
    s.conv("conv1", 1, 6, 5, pad=2).add("relu1", "relu").add("pool1", "maxpool", k=2)
    s.conv("conv2", 6, 16, 5).add("relu2", "relu").add("pool2", "maxpool", k=2)
    s.add("flatten", "flatten")
    s.add("fc1", "linear", fin=400, fout=120).add("relu3", "relu")
    s.add("fc2", "linear", fin=120, fout=84).add("relu4", "relu")
    s.add("logits", "linear", fin=84, fout=10)
    return s.layers


def residual_block(s, name, cin, cout, stride, input):
    """conv-bn-relu-conv-bn plus a shortcut (identity, or 1x1 conv + bn when the shape changes), relu."""
    s.conv(f"{name}_conv1", cin, cout, 3, stride=stride, pad=1, bias=False, input=input)
    s.add(f"{name}_bn1", "bn", c=cout).add(f"{name}_relu1", "relu")
    s.conv(f"{name}_conv2", cout, cout, 3, pad=1, bias=False).add(f"{name}_bn2", "bn", c=cout)
    shortcut = input
    if stride != 1 or cin != cout:
        s.conv(f"{name}_proj", cin, cout, 1, stride=stride, bias=False, input=input)
        s.add(f"{name}_proj_bn", "bn", c=cout)
        shortcut = f"{name}_proj_bn"
    s.add(f"{name}_add", "add", [f"{name}_bn2", shortcut]).add(f"{name}_out", "relu")


def resnet():
    s = Spec()
    s.conv("stem", 1, 32, 3, pad=1, bias=False).add("stem_bn", "bn", c=32).add("stem_relu", "relu")
    residual_block(s, "b1", 32, 32, 1, "stem_relu")   # 28x28
    residual_block(s, "b2", 32, 64, 2, "b1_out")      # 14x14
    residual_block(s, "b3", 64, 128, 2, "b2_out")     # 7x7
    s.add("gap", "gap").add("flatten", "flatten").add("logits", "linear", fin=128, fout=10)
    return s.layers


ARCHS = {"lenet": lenet, "resnet": resnet}


def init_params(layers, seed):
    """Seeded random weights, uniform in +-1/sqrt(fan_in) as pd-train initialises them. batch_norm gets
    non-trivial running stats (var in [0.5, 1.5]) so that no peer can treat it as an identity."""
    rng = np.random.default_rng(seed)
    uniform = lambda bound, *shape: rng.uniform(-bound, bound, shape).astype(np.float32)
    p = {}
    for l in layers:
        a = l.attrs
        if l.type == "conv":
            bound = 1 / np.sqrt(a["cin"] * a["k"] * a["k"])
            p[l.name + ".weight"] = uniform(bound, a["cout"], a["cin"], a["k"], a["k"])
            if a["bias"]:
                p[l.name + ".bias"] = uniform(bound, a["cout"])
        elif l.type == "linear":  # weight [out, in], as in docs/model-yaml.md
            bound = 1 / np.sqrt(a["fin"])
            p[l.name + ".weight"] = uniform(bound, a["fout"], a["fin"])
            p[l.name + ".bias"] = uniform(bound, a["fout"])
        elif l.type == "bn":
            c = a["c"]
            p[l.name + ".weight"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
            p[l.name + ".bias"] = uniform(0.1, c)
            p[l.name + ".mean"] = uniform(0.1, c)
            p[l.name + ".var"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
    return p


# ---- timing -------------------------------------------------------------------------------------------

def time_calls(call, warmup, repeat):
    """Per-call latencies in ms of `repeat` calls after `warmup` untimed ones."""
    for _ in range(warmup):
        call()
    ms = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter()
        call()
        ms[i] = (time.perf_counter() - t0) * 1e3
    return ms


def summary(runtime, args, ms):
    return {"runtime": runtime, "arch": args.arch, "batch": args.batch, "threads": args.threads,
            "p50_ms": round(float(np.median(ms)), 4), "min_ms": round(float(ms.min()), 4),
            "p90_ms": round(float(np.percentile(ms, 90)), 4),
            "throughput": round(args.batch / (float(ms.mean()) / 1e3), 2)}


# ---- onnxruntime --------------------------------------------------------------------------------------

def onnx_nodes(l, helper):
    """The ONNX node(s) of one layer; parameter initialisers are named '<layer>.<param>'."""
    a, ins, out = l.attrs, list(l.inputs), l.name
    if l.type == "conv":
        k, pd = a["k"], a["pad"]
        ins += [out + ".weight"] + ([out + ".bias"] if a["bias"] else [])
        return [helper.make_node("Conv", ins, [out], name=out, kernel_shape=[k, k],
                                 strides=[a["stride"]] * 2, pads=[pd] * 4)]
    if l.type == "bn":
        ins += [out + s for s in (".weight", ".bias", ".mean", ".var")]
        return [helper.make_node("BatchNormalization", ins, [out], name=out, epsilon=EPS)]
    if l.type == "linear":
        ins += [out + ".weight", out + ".bias"]
        return [helper.make_node("Gemm", ins, [out], name=out, transB=1)]
    if l.type == "maxpool":
        return [helper.make_node("MaxPool", ins, [out], name=out, kernel_shape=[a["k"]] * 2,
                                 strides=[a["k"]] * 2)]
    op = {"relu": "Relu", "add": "Add", "gap": "GlobalAveragePool", "flatten": "Flatten"}[l.type]
    return [helper.make_node(op, ins, [out], name=out)]


def build_onnx(layers, params, path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes = [n for l in layers for n in onnx_nodes(l, helper)]
    image = helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 1, 28, 28])
    logits = helper.make_tensor_value_info(layers[-1].name, TensorProto.FLOAT, ["batch", 10])
    inits = [numpy_helper.from_array(v, k) for k, v in params.items()]
    graph = helper.make_graph(nodes, "peer_infer", [image], [logits], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="paddle-cpp bench/peer_infer.py")
    model.ir_version = 8  # what opset 13 needs; keeps the file loadable by older onnxruntimes too
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def bench_ort(args, layers, params, x, tmp):
    import onnxruntime as ort
    path = args.onnx
    if not path:
        path = os.path.join(tmp, f"{args.arch}.onnx")
        build_onnx(layers, params, path)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3  # errors only
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    out = sess.run(None, feed)[0]
    ms = time_calls(lambda: sess.run(None, feed), args.warmup, args.repeat)
    del sess  # joins ORT's thread pool so its threads do not compete with the next runtime
    gc.collect()
    return summary(f"onnxruntime {ort.__version__}", args, ms), out


# ---- Paddle Inference ---------------------------------------------------------------------------------

def paddle_net(layers, params):
    """A paddle.nn.Layer that runs the layer list (a DAG through the names), in eval mode."""
    import paddle, paddle.nn as nn

    def make(l):
        a = l.attrs
        if l.type == "conv":
            return nn.Conv2D(a["cin"], a["cout"], a["k"], stride=a["stride"], padding=a["pad"],
                             bias_attr=None if a["bias"] else False)
        if l.type == "bn":
            return nn.BatchNorm2D(a["c"], epsilon=EPS)
        if l.type == "linear":
            return nn.Linear(a["fin"], a["fout"])
        if l.type == "maxpool":
            return nn.MaxPool2D(a["k"])
        return {"relu": nn.ReLU, "gap": lambda: nn.AdaptiveAvgPool2D(1), "flatten": nn.Flatten}[l.type]()

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.layers = layers
            self.mods = nn.LayerDict({l.name: make(l) for l in layers if l.type != "add"})

        def forward(self, image):
            # Plain Python control flow over a fixed list: jit.save traces it into a static graph.
            vals = {"image": image}
            for l in self.layers:
                xs = [vals[i] for i in l.inputs]
                vals[l.name] = xs[0] + xs[1] if l.type == "add" else self.mods[l.name](xs[0])
            return vals[self.layers[-1].name]

    net = Net()
    for l in layers:  # copy the shared weights in (Paddle's Linear keeps weight as [in, out])
        if l.type not in ("conv", "linear", "bn"):
            continue
        m, p = net.mods[l.name], l.name + "."
        if l.type in ("conv", "linear"):
            w = params[p + "weight"]
            m.weight.set_value(w.T if l.type == "linear" else w)
            if m.bias is not None:
                m.bias.set_value(params[p + "bias"])
        elif l.type == "bn":
            for t, k in ((m.weight, "weight"), (m.bias, "bias"), (m._mean, "mean"), (m._variance, "var")):
                t.set_value(params[p + k])
    net.eval()
    return net


def save_paddle(layers, params, prefix):
    import paddle
    from paddle.static import InputSpec
    paddle.set_device("cpu")
    net = paddle_net(layers, params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paddle.jit.save(net, prefix, input_spec=[InputSpec([None, 1, 28, 28], "float32", "image")])
    # Paddle 3 writes the program as PIR JSON, Paddle 2 as a .pdmodel protobuf.
    program = next(p for p in (prefix + ".json", prefix + ".pdmodel") if os.path.exists(p))
    return program, prefix + ".pdiparams"


def paddle_predictor(files, threads, mkldnn):
    from paddle import inference
    config = inference.Config(*files)
    config.disable_gpu()
    config.switch_ir_optim(True)
    config.set_cpu_math_library_num_threads(threads)
    config.disable_glog_info()
    if mkldnn:
        config.enable_mkldnn()
    return inference.create_predictor(config)


def paddle_runner(predictor, x):
    """One call: hand the input over, run, fetch the output (as ORT's session.run does)."""
    inp = predictor.get_input_handle(predictor.get_input_names()[0])
    out = predictor.get_output_handle(predictor.get_output_names()[0])

    def call():
        inp.copy_from_cpu(x)
        predictor.run()
        return out.copy_to_cpu()
    return call


def bench_paddle(args, layers, params, x, tmp):
    import paddle
    files = save_paddle(layers, params, os.path.join(tmp, args.arch))
    runtime = f"paddle-inference {paddle.__version__}"
    try:
        call = paddle_runner(paddle_predictor(files, args.threads, mkldnn=True), x)
        out = call()  # a first run, so that a MKLDNN failure shows up here and not mid-timing
        runtime += " (mkldnn)"
    except Exception as e:  # e.g. a CPU or build without oneDNN support: measure the plain CPU kernels
        call = paddle_runner(paddle_predictor(files, args.threads, mkldnn=False), x)
        out = call()
        runtime += f" (no mkldnn: {type(e).__name__})"
    ms = time_calls(call, args.warmup, args.repeat)
    return summary(runtime, args, ms), out


# ---- main ---------------------------------------------------------------------------------------------

def quiet_env():
    """Silences glog; must run before paddle is imported. OMP_NUM_THREADS is left alone (paddle warns
    when it is > 1): Config.set_cpu_math_library_num_threads sets the OpenMP threads of the predictor."""
    os.environ.setdefault("GLOG_minloglevel", "3")
    os.environ.setdefault("GLOG_v", "0")
    os.environ.setdefault("FLAGS_call_stack_level", "0")


def main():
    ap = argparse.ArgumentParser(description="onnxruntime / Paddle Inference latency of the example nets")
    ap.add_argument("--arch", choices=sorted(ARCHS), default="lenet")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=500)
    ap.add_argument("--runtime", choices=["ort", "paddle", "both"], default="both")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--onnx", help="time onnxruntime on this model file instead of building --arch")
    args = ap.parse_args()
    quiet_env()

    layers = params = None
    if args.onnx:
        args.arch, args.runtime = os.path.basename(args.onnx), "ort"
    else:
        layers = ARCHS[args.arch]()
        params = init_params(layers, args.seed)
    x = np.random.default_rng(args.seed + 1).standard_normal((args.batch, 1, 28, 28), np.float32)
    outs = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, bench in (("ort", bench_ort), ("paddle", bench_paddle)):
            if args.runtime in (name, "both"):
                result, out = bench(args, layers, params, x, tmp)
                print(json.dumps(result), flush=True)
                outs.append(out)
    # Same weights and input: the peers must agree, else they are not running the same network.
    if len(outs) == 2 and not np.allclose(outs[0], outs[1], rtol=1e-3, atol=1e-3):
        print(f"peer_infer: warning: onnxruntime and Paddle outputs differ (max abs diff "
              f"{np.abs(outs[0] - outs[1]).max():.3g})", file=sys.stderr)


if __name__ == "__main__":
    main()
