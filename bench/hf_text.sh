#!/usr/bin/env bash
# pd-convert + pd-infer on HF transformers' text models as users export them (bench/hf_export.py: the
# architectures of bert-base-uncased, distilbert-base-uncased and gpt2 with random weights, opset 14):
# imported with the batch and sequence fixed by --input-shape (their mask code needs both), parity with
# onnxruntime on the same ids (pd-convert --verify), then pd-infer on the imported model against
# onnxruntime on the same .onnx file (ORT_ENABLE_ALL), both with THREADS threads, timed in alternation for
# ROUNDS rounds (median of the per-round p50s: the machine is shared and noisy).
#   usage: [MODELS="bert_base distilbert gpt2"] [SHAPES="1x128 8x128"] bench/hf_text.sh [THREADS] [ROUNDS]
#   (PY: a python with torch, transformers and onnxruntime; default the venv of ../shared/peers/torch2_venv.sh,
#   with `pip install transformers` into it)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
ROUNDS=${2:-3}
MODELS=${MODELS:-bert_base distilbert gpt2}
SHAPES=${SHAPES:-1x128}
PY=${PY:-$(bash ../shared/peers/torch2_venv.sh)}
PD_CONVERT=${PD_CONVERT:-build/tools/pd-convert}
PD_INFER=${PD_INFER:-build/tools/pd-infer}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
source bench/common.sh  # field, median

ort_p50() {  # FILE: p50 ms of onnxruntime on FILE with its ids and mask
  "$PY" - "$1" "$THREADS" <<'PY'
import sys, time, statistics, numpy as np, onnxruntime as ort
path, threads = sys.argv[1], int(sys.argv[2])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
feed = {n: np.load(f"{path}.{n}.npy") for n in ("input_ids", "attention_mask")}
for _ in range(3): s.run(None, feed)
ms = []
for _ in range(20):
    t = time.perf_counter(); s.run(None, feed); ms.append((time.perf_counter() - t) * 1e3)
print("%.4f" % statistics.median(ms))
PY
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); threads $THREADS; $ROUNDS alternating rounds"
echo "| model | batch x seq | max abs diff vs onnxruntime | pd-infer p50 ms | onnxruntime p50 ms | pd / ort (rounds) |"
echo "|---|---|---|---|---|---|"
for model in $MODELS; do
  for shape in $SHAPES; do
    f="$OUT/$model-$shape.onnx"
    "$PY" bench/hf_export.py "$model" "$f" "${shape%x*}" "${shape#*x}" 2>/dev/null
    inputs=(--input "input_ids=$f.input_ids.npy" --input "attention_mask=$f.attention_mask.npy")
    report=$("$PD_CONVERT" "$f" "$OUT/$model.pdmodel" --input-shape "input_ids=$shape" --input-shape "attention_mask=$shape" \
             --verify "${inputs[@]}" --python "$PY")
    parity=$(grep -o "max abs [^,]*" <<< "$report" | head -1 || echo "?")
    rm "$f.data" 2>/dev/null || true
    pd="" ort="" ratios=""
    for ((r = 0; r < ROUNDS; ++r)); do
      a=$("$PD_INFER" "$OUT/$model.pdmodel" -i "input_ids=$f.input_ids.npy" -i "attention_mask=$f.attention_mask.npy" \
          --threads "$THREADS" --warmup 3 --repeat 20 --json | field 'd["latency_ms"]["p50"]')
      b=$(ort_p50 "$f")
      pd+=" $a" ort+=" $b" ratios+=" $(python3 -c "print('%.2f' % ($a / $b))")"
    done
    echo "| $model | $shape | $parity | $(median $pd) | $(median $ort) | **$(median $ratios)** ($(xargs <<< "$ratios" | tr ' ' ',')) |"
  done
done
