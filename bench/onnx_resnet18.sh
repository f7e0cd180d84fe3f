#!/usr/bin/env bash
# pd-convert's targets on a torchvision ResNet-18 (random weights, 224x224, opset 13, dynamic batch, as
# torch.onnx.export writes it): import time, parity with onnxruntime, and latency of pd-infer on the
# imported model as it is (pd-infer optimises it at -O2 and lowers it when it loads, as onnxruntime's
# session does) against onnxruntime on the same .onnx file (ORT_ENABLE_ALL), both with
# THREADS threads, at batch 1 and 8, timed in alternation for ROUNDS rounds (median of the per-round p50s:
# the machine is shared and noisy).
#   usage: bench/onnx_resnet18.sh [THREADS] [ROUNDS]     (PY: a python with torch, torchvision, onnxruntime;
#                                                          default the venv of ../shared/peers/torch2_venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
ROUNDS=${2:-5}
PY=${PY:-$(bash ../shared/peers/torch2_venv.sh)}
PD_CONVERT=${PD_CONVERT:-build/tools/pd-convert}
PD_INFER=${PD_INFER:-build/tools/pd-infer}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

"$PY" - "$OUT/resnet18.onnx" <<'PY' 2>/dev/null
import sys, torch, torchvision
m = torchvision.models.resnet18(weights=None).eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), sys.argv[1], opset_version=13, input_names=["input"],
                  output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
PY
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); threads $THREADS"
"$PD_CONVERT" "$OUT/resnet18.onnx" "$OUT/r18.pdmodel" --report --verify --batch 2 --python "$PY" | grep -E "converted in|verify"

ort_p50() {  # ort_p50 BATCH: p50 ms of onnxruntime on the same file
  "$PY" - "$OUT/resnet18.onnx" "$1" "$THREADS" <<'PY'
import sys, time, statistics, numpy as np, onnxruntime as ort
path, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224), dtype=np.float32)
for _ in range(10): s.run(None, {"input": x})
ms = []
for _ in range(50):
    t = time.perf_counter(); s.run(None, {"input": x}); ms.append((time.perf_counter() - t) * 1e3)
print("%.4f" % statistics.median(ms))
PY
}
source bench/common.sh  # field, median

echo "| batch | pd-infer p50 ms | onnxruntime p50 ms | pd / ort |"
echo "|---|---|---|---|"
for batch in 1 8; do
  pd="" ort=""
  for ((r = 0; r < ROUNDS; ++r)); do
    pd+=" $("$PD_INFER" "$OUT/r18.pdmodel" -b "$batch" --threads "$THREADS" --warmup 10 --repeat 50 --json | field 'd["latency_ms"]["p50"]')"
    ort+=" $(ort_p50 "$batch")"
  done
  a=$(median $pd) b=$(median $ort)
  echo "| $batch | $a | $b | $(python3 -c "print('%.2f' % ($a / $b))") |"
done
