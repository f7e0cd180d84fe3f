#!/usr/bin/env bash
# pd-infer and onnxruntime on a quiet machine and under a competing 2-thread load (a pd-train of the MLP
# example on 2 threads, started for the measurement), LeNet at batch 64, the ViT at batch 1 and, given its
# run directory, the residual example at batch 1 and 64; 2 threads each. p50 and p90 in ms (the tail is
# where a busy machine shows: a runtime whose threads meet at a barrier waits out the other process's time
# slice there), each the median over ROUNDS alternating rounds.
#   usage: PEER_PY=PYTHON bench/contention.sh LENET_RUN_DIR VIT_RUN_DIR [ROUNDS] [RESNET_RUN_DIR]
#   (PYTHON with onnx, onnxruntime)
set -euo pipefail
LENET=$(cd "$1" && pwd)
VIT=$(cd "$2" && pwd)
ROUNDS=${3:-3}
RESNET=""
[ -n "${4:-}" ] && RESNET=$(cd "$4" && pwd)
cd "$(dirname "$0")/.."
PEER_PY=${PEER_PY:-python3}
source bench/common.sh  # field, median
[ -f "$LENET/model_O2.pdmodel" ] || build/tools/pd-opt "$LENET/model.pdmodel" "$LENET/model_O2.pdmodel" -O2 > /dev/null
[ -f "$VIT/model_O2.pdmodel" ] || build/tools/pd-opt "$VIT/model.pdmodel" "$VIT/model_O2.pdmodel" -O2 > /dev/null
[ -z "$RESNET" ] || [ -f "$RESNET/model_O2.pdmodel" ] || build/tools/pd-opt "$RESNET/model.pdmodel" "$RESNET/model_O2.pdmodel" -O2 > /dev/null
[ -f "$VIT/model.onnx" ] || build/tools/pd-convert "$VIT/model.pdmodel" "$VIT/model.onnx" --opset 17 > /dev/null
pd() {  # MODEL BATCH: pd-infer's "p50 p90"
  timeout 60 build/tools/pd-infer "$1" --batch "$2" --threads 2 --warmup 5 --repeat 200 --json |
    field '"%s %s" % (d["latency_ms"]["p50"], d["latency_ms"]["p90"])'
}
ort() {  # lenet|vit|resnet BATCH: onnxruntime's "p50 p90"
  local what=(--arch "$1")
  [ "$1" = vit ] && what=(--onnx "$VIT/model.onnx")
  timeout 60 "$PEER_PY" bench/peer_infer.py "${what[@]}" --batch "$2" --threads 2 --warmup 5 --repeat 200 --runtime ort |
    field '"%s %s" % (d["p50_ms"], d["p90_ms"])'
}
load_pid=""
start_load() {
  build/tools/pd-train examples/mlp_fmnist.yaml --epochs 1000 --threads 2 --out "$(mktemp -d)/load" -q > /dev/null 2>&1 &
  load_pid=$!
  sleep 3  # past loading the data
}
stop_load() { kill "$load_pid" 2> /dev/null || true; wait "$load_pid" 2> /dev/null || true; }
trap stop_load EXIT
echo "| model | batch | pd-infer quiet p50 / p90 | onnxruntime quiet | pd-infer loaded | onnxruntime loaded | p50 slowdown pd / ORT |"
echo "|---|---|---|---|---|---|---|"
declare -A p50 p90
add() {  # KEY "P50 P90": one round's figures
  local a b
  read -r a b <<< "$2"
  p50[$1]+=" $a"
  p90[$1]+=" $b"
}
# shellcheck disable=SC2086  # space-separated numbers
both() { echo "$(median ${p50[$1]}) / $(median ${p90[$1]})"; }
jobs=("lenet 64 $LENET/model_O2.pdmodel" "vit 1 $VIT/model_O2.pdmodel")
[ -n "$RESNET" ] && jobs+=("resnet 1 $RESNET/model_O2.pdmodel" "resnet 64 $RESNET/model_O2.pdmodel")
for job in "${jobs[@]}"; do
  read -r name batch model <<< "$job"
  p50=() p90=()
  for ((r = 0; r < ROUNDS; ++r)); do
    add pq "$(pd "$model" "$batch")"
    add oq "$(ort "$name" "$batch")"
    start_load
    add pl "$(pd "$model" "$batch")"
    add ol "$(ort "$name" "$batch")"
    stop_load
  done
  # shellcheck disable=SC2086  # space-separated numbers
  slow=$(awk -v a="$(median ${p50[pl]})" -v b="$(median ${p50[pq]})" -v c="$(median ${p50[ol]})" -v d="$(median ${p50[oq]})" \
    'BEGIN { printf "%.1fx / %.1fx", a / b, c / d }')
  echo "| $name | $batch | $(both pq) | $(both oq) | $(both pl) | $(both ol) | $slow |"
done
