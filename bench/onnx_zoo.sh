#!/usr/bin/env bash
# pd-convert + pd-infer on torchvision's ImageNet models as users export them (bench/tv_export.py: random
# weights with batch-norm statistics drawn away from the defaults, so that no layer's output is
# degenerate; 224x224, opset 13, dynamic batch, the TorchScript exporter): import time and parity with
# onnxruntime (pd-convert --verify at batch 2), then pd-infer on the imported model as it is (optimised
# and lowered at load, as onnxruntime's session optimises) against onnxruntime on the same .onnx file
# (ORT_ENABLE_ALL), both with THREADS threads, timed in alternation for ROUNDS rounds at each batch of
# BATCHES (median of the per-round p50s: the machine is shared and noisy).
# EXPORTER=dynamo exports with torch.onnx.export's default exporter (dynamo, opset 20 in torch 2.15) instead.
#   usage: [MODELS="resnet18 ..."] [BATCHES="1 8"] [EXPORTER=dynamo] bench/onnx_zoo.sh [THREADS] [ROUNDS]
#   (PY: a python with torch, torchvision, onnxruntime; default the venv of ../shared/peers/torch2_venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
ROUNDS=${2:-5}
MODELS=${MODELS:-resnet18 resnet50 mobilenet_v2 mobilenet_v3_small efficientnet_b0 shufflenet_v2_x1_0 mnasnet1_0 regnet_y_400mf squeezenet1_0}
BATCHES=${BATCHES:-1}
PY=${PY:-$(bash ../shared/peers/torch2_venv.sh)}
PD_CONVERT=${PD_CONVERT:-build/tools/pd-convert}
PD_INFER=${PD_INFER:-build/tools/pd-infer}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
source bench/common.sh  # field, median

EXPORTER=${EXPORTER:-torchscript}
export_model() {  # NAME -> $OUT/NAME.onnx (bench/tv_export.py: random weights, 224x224, opset 13 or the exporter's)
  "$PY" bench/tv_export.py "$1" "$OUT/$1.onnx" "$EXPORTER" >/dev/null 2>&1 || { echo "onnx_zoo.sh: exporting $1 failed" >&2; exit 1; }
}

ort_p50() {  # MODEL BATCH: p50 ms of onnxruntime on the same file
  "$PY" - "$OUT/$1.onnx" "$2" "$THREADS" <<'PY'
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

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); threads $THREADS; $ROUNDS alternating rounds; exporter $EXPORTER"
echo "| model | batch | import s | max abs diff vs onnxruntime (argmax) | pd-infer p50 ms | onnxruntime p50 ms | pd / ort (rounds) |"
echo "|---|---|---|---|---|---|---|"
for model in $MODELS; do
  export_model "$model"
  report=$("$PD_CONVERT" "$OUT/$model.onnx" "$OUT/$model.pdmodel" --report --verify --batch 2 --python "$PY")
  secs=$(grep -o "converted in [0-9.]* s" <<< "$report" | grep -o "[0-9.]*" || echo "?")
  parity="$(grep -o "max abs [^,]*" <<< "$report" | head -1 || echo "?") ($(grep -o "argmax agrees [0-9/]*" <<< "$report" | head -1 || echo "?"))"
  for batch in $BATCHES; do
    pd="" ort="" ratios=""
    for ((r = 0; r < ROUNDS; ++r)); do
      a=$("$PD_INFER" "$OUT/$model.pdmodel" -b "$batch" --threads "$THREADS" --warmup 10 --repeat 50 --json | field 'd["latency_ms"]["p50"]')
      b=$(ort_p50 "$model" "$batch")
      pd+=" $a" ort+=" $b" ratios+=" $(python3 -c "print('%.2f' % ($a / $b))")"
    done
    echo "| $model | $batch | $secs | $parity | $(median $pd) | $(median $ort) | **$(median $ratios)** ($(xargs <<< "$ratios" | tr ' ' ',')) |"
  done
done
