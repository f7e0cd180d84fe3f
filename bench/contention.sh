#!/usr/bin/env bash
# pd-infer and onnxruntime on a quiet machine and under a competing 2-thread load (a pd-train of the MLP
# example on 2 threads, started for the measurement), LeNet at batch 64, the ViT at batch 1 and, given its
# run directory, the residual example at batch 1 and 64; 2 threads each. Under load pd-infer runs twice: both processes as the tools start by default (GOMP_SPINCOUNT=10000,
# tools/common/openmp_spin.h), and both with libgomp's own default spin (GOMP_SPINCOUNT=300000, how the
# tools ran before). p50 in ms, the median over ROUNDS alternating rounds.
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
median() { python3 -c "import statistics,sys; print('%.3g' % statistics.median(float(v) for v in sys.argv[1:]))" "$@"; }
[ -f "$LENET/model_O2.pdmodel" ] || build/tools/pd-opt "$LENET/model.pdmodel" "$LENET/model_O2.pdmodel" -O2 > /dev/null
[ -f "$VIT/model_O2.pdmodel" ] || build/tools/pd-opt "$VIT/model.pdmodel" "$VIT/model_O2.pdmodel" -O2 > /dev/null
[ -z "$RESNET" ] || [ -f "$RESNET/model_O2.pdmodel" ] || build/tools/pd-opt "$RESNET/model.pdmodel" "$RESNET/model_O2.pdmodel" -O2 > /dev/null
[ -f "$VIT/model.onnx" ] || build/tools/pd-convert "$VIT/model.pdmodel" "$VIT/model.onnx" --opset 17 > /dev/null
pd() {  # MODEL BATCH [ENV...]: pd-infer's p50
  local model=$1 batch=$2; shift 2
  env "$@" timeout 60 build/tools/pd-infer "$model" --batch "$batch" --threads 2 --warmup 5 --repeat 50 --json | field 'd["latency_ms"]["p50"]'
}
ort() {  # lenet|vit|resnet BATCH: onnxruntime's p50
  local what=(--arch "$1")
  [ "$1" = vit ] && what=(--onnx "$VIT/model.onnx")
  timeout 60 "$PEER_PY" bench/peer_infer.py "${what[@]}" --batch "$2" --threads 2 --warmup 5 --repeat 50 --runtime ort | field 'd["p50_ms"]'
}
load_pid=""
start_load() {  # [ENV...]
  env "$@" build/tools/pd-train examples/mlp_fmnist.yaml --epochs 1000 --threads 2 --out "$(mktemp -d)/load" -q > /dev/null 2>&1 &
  load_pid=$!
  sleep 3  # past loading the data
}
stop_load() { kill "$load_pid" 2> /dev/null || true; wait "$load_pid" 2> /dev/null || true; }
trap stop_load EXIT
echo "| model | batch | pd-infer quiet | onnxruntime quiet | pd-infer loaded | pd-infer loaded, both at libgomp's spin | onnxruntime loaded | slowdown pd / ORT |"
echo "|---|---|---|---|---|---|---|---|"
jobs=("lenet 64 $LENET/model_O2.pdmodel" "vit 1 $VIT/model_O2.pdmodel")
[ -n "$RESNET" ] && jobs+=("resnet 1 $RESNET/model_O2.pdmodel" "resnet 64 $RESNET/model_O2.pdmodel")
for job in "${jobs[@]}"; do
  read -r name batch model <<< "$job"
  declare -A t=([pq]="" [oq]="" [pl]="" [pg]="" [ol]="")
  for ((r = 0; r < ROUNDS; ++r)); do
    t[pq]+=" $(pd "$model" "$batch")"
    t[oq]+=" $(ort "$name" "$batch")"
    start_load
    t[pl]+=" $(pd "$model" "$batch")"
    t[ol]+=" $(ort "$name" "$batch")"
    stop_load
    start_load GOMP_SPINCOUNT=300000
    t[pg]+=" $(pd "$model" "$batch" GOMP_SPINCOUNT=300000)"
    stop_load
  done
  # shellcheck disable=SC2086  # space-separated numbers
  pq=$(median ${t[pq]}); oq=$(median ${t[oq]}); pl=$(median ${t[pl]}); pg=$(median ${t[pg]}); ol=$(median ${t[ol]})
  slow=$(awk -v a="$pl" -v b="$pq" -v c="$ol" -v d="$oq" 'BEGIN { printf "%.1fx / %.1fx", a / b, c / d }')
  echo "| $name | $batch | $pq | $oq | $pl | $pg | $ol | $slow |"
done
