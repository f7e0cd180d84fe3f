#!/usr/bin/env bash
# pd-infer and onnxruntime on a quiet machine and under a competing 2-thread load (a pd-train of the MLP
# example on 2 threads, started for the measurement), LeNet at batch 64, the ViT at batch 1 and, given its
# run directory, the residual example at batch 1 and 64; 2 threads each. p50, p90 and mean in ms (the tail
# is where a busy machine shows: a runtime whose threads meet at a barrier waits out the other process's
# time slice there), each the median over ROUNDS alternating rounds.
# With INT8=1 the LeNet, ViT and residual runs are timed quantized too (rows "lenet-int8", "vit-int8",
# "resnet-int8"):
# pd-quant's model after pd-opt -O2 against onnxruntime's quantize_static model (bench/ort_quant.py's
# settings, pd-quant's defaults), both made once into the run directory.
# With ONE_THREAD=1 pd-infer is also timed quiet on one thread, and a last column gives its loaded p50
# over that: what the busy process cost beyond the second core (1.0x: it took the core and nothing else).
#   usage: [INT8=1] [ONE_THREAD=1] PEER_PY=PYTHON bench/contention.sh LENET_RUN_DIR VIT_RUN_DIR [ROUNDS] [RESNET_RUN_DIR]
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
int8_models() {  # RUN_DIR: pd-quant's model after -O2 and onnxruntime's int8 model, made once
  [ -f "$1/model_int8_O2.pdmodel" ] || {
    build/tools/pd-quant "$1/model.pdmodel" "$1/model_int8.pdmodel" --calib "$1/config.yaml" --threads 2 > /dev/null &&
      build/tools/pd-opt "$1/model_int8.pdmodel" "$1/model_int8_O2.pdmodel" -O2 > /dev/null
  }
  [ -f "$1/model_int8.onnx" ] || "$PEER_PY" bench/ort_quant.py "$1" --write-int8 "$1/model_int8.onnx" > /dev/null 2>&1
}
if [ "${INT8:-0}" = 1 ]; then
  int8_models "$LENET"
  int8_models "$VIT"
  [ -z "$RESNET" ] || int8_models "$RESNET"
fi
pd() {  # MODEL BATCH [THREADS]: pd-infer's "p50 p90 mean"
  timeout 60 build/tools/pd-infer "$1" --batch "$2" --threads "${3:-2}" --warmup 5 --repeat 200 --json |
    field '"%s %s %s" % (d["latency_ms"]["p50"], d["latency_ms"]["p90"], d["latency_ms"]["mean"])'
}
ort() {  # lenet|vit|resnet|lenet-int8|vit-int8|resnet-int8 BATCH: onnxruntime's "p50 p90 mean"
  local what=(--arch "$1")
  case $1 in
    vit) what=(--onnx "$VIT/model.onnx") ;;
    lenet-int8) what=(--onnx "$LENET/model_int8.onnx") ;;
    vit-int8) what=(--onnx "$VIT/model_int8.onnx") ;;
    resnet-int8) what=(--onnx "$RESNET/model_int8.onnx") ;;
  esac
  timeout 60 "$PEER_PY" bench/peer_infer.py "${what[@]}" --batch "$2" --threads 2 --warmup 5 --repeat 200 --runtime ort |
    field '"%s %s %.4g" % (d["p50_ms"], d["p90_ms"], d["batch"] / d["throughput"] * 1e3)'
}
load_pid=""
start_load() {
  build/tools/pd-train examples/mlp_fmnist.yaml --epochs 1000 --threads 2 --out "$(mktemp -d)/load" -q > /dev/null 2>&1 &
  load_pid=$!
  sleep 3  # past loading the data
}
stop_load() { kill "$load_pid" 2> /dev/null || true; wait "$load_pid" 2> /dev/null || true; }
trap stop_load EXIT
# The mean beside p50 and p90: a runtime whose threads wait for each other at the end of every op loses
# whole time slices in a few runs (its p90), one whose caller goes on alone loses a little in many (its
# p50); the mean is what the other process's share cost each.
ONE_THREAD=${ONE_THREAD:-0}
if [ "$ONE_THREAD" = 1 ]; then
  echo "| model | batch | pd-infer quiet p50 / p90 / mean | onnxruntime quiet | pd-infer loaded | onnxruntime loaded | slowdown pd / ORT: p50 | mean | pd-infer 1 thread quiet | pd loaded / 1 thread quiet, p50 |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
else
  echo "| model | batch | pd-infer quiet p50 / p90 / mean | onnxruntime quiet | pd-infer loaded | onnxruntime loaded | slowdown pd / ORT: p50 | mean |"
  echo "|---|---|---|---|---|---|---|---|"
fi
declare -A p50 p90 mean
add() {  # KEY "P50 P90 MEAN": one round's figures
  local a b c
  read -r a b c <<< "$2"
  p50[$1]+=" $a"
  p90[$1]+=" $b"
  mean[$1]+=" $c"
}
# shellcheck disable=SC2086  # space-separated numbers
all3() { echo "$(median ${p50[$1]}) / $(median ${p90[$1]}) / $(median ${mean[$1]})"; }
ratio() {  # TABLE: pd's loaded / quiet and onnxruntime's, of that table's medians
  local -n t=$1
  # shellcheck disable=SC2086  # space-separated numbers
  awk -v a="$(median ${t[pl]})" -v b="$(median ${t[pq]})" -v c="$(median ${t[ol]})" -v d="$(median ${t[oq]})" \
    'BEGIN { printf "%.1fx / %.1fx", a / b, c / d }'
}
jobs=("lenet 64 $LENET/model_O2.pdmodel" "vit 1 $VIT/model_O2.pdmodel")
[ -n "$RESNET" ] && jobs+=("resnet 1 $RESNET/model_O2.pdmodel" "resnet 64 $RESNET/model_O2.pdmodel")
if [ "${INT8:-0}" = 1 ]; then
  jobs+=("lenet-int8 64 $LENET/model_int8_O2.pdmodel" "vit-int8 1 $VIT/model_int8_O2.pdmodel")
  [ -n "$RESNET" ] && jobs+=("resnet-int8 1 $RESNET/model_int8_O2.pdmodel" "resnet-int8 64 $RESNET/model_int8_O2.pdmodel")
fi
for job in "${jobs[@]}"; do
  read -r name batch model <<< "$job"
  p50=() p90=() mean=()
  for ((r = 0; r < ROUNDS; ++r)); do
    add pq "$(pd "$model" "$batch")"
    [ "$ONE_THREAD" = 1 ] && add p1 "$(pd "$model" "$batch" 1)"
    add oq "$(ort "$name" "$batch")"
    start_load
    add pl "$(pd "$model" "$batch")"
    add ol "$(ort "$name" "$batch")"
    stop_load
  done
  row="| $name | $batch | $(all3 pq) | $(all3 oq) | $(all3 pl) | $(all3 ol) | $(ratio p50) | $(ratio mean) |"
  if [ "$ONE_THREAD" = 1 ]; then
    # shellcheck disable=SC2086  # space-separated numbers
    row+=" $(all3 p1) | $(awk -v a="$(median ${p50[pl]})" -v b="$(median ${p50[p1]})" 'BEGIN { printf "%.2fx", a / b }') |"
  fi
  echo "$row"
done
