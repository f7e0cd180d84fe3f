#!/usr/bin/env bash
# pd-infer latency of trained LeNet and ResNet models after pd-opt -O2, next to onnxruntime and Paddle
# Inference running the same architectures (bench/peer_infer.py: seeded random weights, their own graph
# optimisers on), at batch 1 and 64 on random inputs. Ratios are peer p50 / pd-infer p50 (> 1: pd-infer
# is faster). A third run dir, of examples/vit_fmnist.yaml, adds the ViT: onnxruntime runs pd-convert's
# ONNX export of that same trained model (opset 17; its own graph optimiser fuses attention, layer norm
# and GELU back), Paddle Inference is not run for it.
#   usage: bench/infer_peers.sh LENET_RUN_DIR RESNET_RUN_DIR [THREADS] [VIT_RUN_DIR]
#   (run dirs from pd-train, holding model.pdmodel; model_O2.pdmodel is made with pd-opt -O2 if missing;
#    a run dir given as - or without model.pdmodel is skipped with a note on stderr)
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bench/infer_peers.sh LENET_RUN_DIR RESNET_RUN_DIR [THREADS]   (- skips a model)" >&2
  exit 2
fi
# Run dirs are made absolute before the cd below, so that relative ones still work.
absdir() { if [ -d "$1" ]; then (cd "$1" && pwd); else echo "$1"; fi; }
declare -A RUNS=([lenet]=$(absdir "$1") [resnet]=$(absdir "$2") [vit]=$(absdir "${4:--}"))
THREADS=${3:-2}
cd "$(dirname "$0")/.."
PD_OPT=${PD_OPT:-build/tools/pd-opt}
PD_INFER=${PD_INFER:-build/tools/pd-infer}
PEER_PY=${PEER_PY:-python3}   # needs onnx, onnxruntime and paddlepaddle
PEER_RUNTIME=${PEER_RUNTIME:-both}   # ort: onnxruntime only (where paddlepaddle is not installed)
WARMUP=${WARMUP:-50}
REPEAT=${REPEAT:-500}
source bench/common.sh  # field, median
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "| model | batch | pd-infer -O2 p50 ms | onnxruntime p50 ms | Paddle Inference p50 ms | ratio ORT/pd | ratio Paddle/pd |"
echo "|---|---|---|---|---|---|---|"
runtimes=""
for arch in lenet resnet vit; do
  run=${RUNS[$arch]}
  if [ ! -f "$run/model.pdmodel" ]; then
    echo "infer_peers.sh: skipping $arch: no model.pdmodel in '$run'" >&2
    continue
  fi
  [ -f "$run/model_O2.pdmodel" ] || "$PD_OPT" "$run/model.pdmodel" "$run/model_O2.pdmodel" -O2 > /dev/null
  for batch in 1 64; do
    pd=$("$PD_INFER" "$run/model_O2.pdmodel" --batch $batch --threads "$THREADS" --warmup "$WARMUP" \
           --repeat "$REPEAT" --json | field 'd["latency_ms"]["p50"]')
    if [ $arch = vit ]; then
      [ -f "$run/model.onnx" ] || build/tools/pd-convert "$run/model.pdmodel" "$run/model.onnx" --opset 17 > /dev/null
      peers=$("$PEER_PY" bench/peer_infer.py --onnx "$run/model.onnx" --batch $batch --threads "$THREADS" \
                --warmup "$WARMUP" --repeat "$REPEAT")
    else
      peers=$("$PEER_PY" bench/peer_infer.py --arch $arch --batch $batch --threads "$THREADS" \
                --warmup "$WARMUP" --repeat "$REPEAT" --runtime "$PEER_RUNTIME")
    fi
    ort=$(echo "$peers" | grep '"runtime": "onnxruntime' | field 'd["p50_ms"]')
    pp=-
    if echo "$peers" | grep -q '"runtime": "paddle-inference'; then
      pp=$(echo "$peers" | grep '"runtime": "paddle-inference' | field 'd["p50_ms"]')
    fi
    runtimes=$(echo "$peers" | python3 -c "import json,sys; print(', '.join(json.loads(l)['runtime'] for l in sys.stdin))")
    pp_ratio=-
    [ "$pp" = - ] || pp_ratio=$(ratio "$pp" "$pd")
    echo "| $arch | $batch | $pd | $ort | $pp | $(ratio "$ort" "$pd") | $pp_ratio |"
  done
done
# Which peers ran (e.g. whether Paddle Inference had MKLDNN) and with how many threads.
if [ -n "$runtimes" ]; then echo; echo "peers: $runtimes; $THREADS threads"; fi
