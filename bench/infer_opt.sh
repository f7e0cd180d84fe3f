#!/usr/bin/env bash
# pd-infer latency of a trained model before and after pd-opt -O2, at batch 1 and batch 64, and the
# test accuracy of both (they must agree within 0.001).
#   usage: bench/infer_opt.sh RUN_DIR [THREADS]      (RUN_DIR from pd-train: model.pdmodel + config.yaml)
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=$1
THREADS=${2:-2}
PD_OPT=${PD_OPT:-build/tools/pd-opt}
PD_INFER=${PD_INFER:-build/tools/pd-infer}
"$PD_OPT" "$RUN/model.pdmodel" "$RUN/model_O2.pdmodel" -O2 --verify > /dev/null
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
echo "| model | level | batch | p50 ms | min ms | samples/s | test acc | p50 speedup |"
echo "|---|---|---|---|---|---|---|---|"
for batch in 1 64; do
  declare -A p50
  for level in O0 O2; do
    model=$RUN/model.pdmodel
    [ $level = O2 ] && model=$RUN/model_O2.pdmodel
    j=$("$PD_INFER" "$model" --batch $batch --threads "$THREADS" --warmup 50 --repeat 500 --json)
    acc=$("$PD_INFER" "$model" --data "$RUN/config.yaml" --batch 500 --threads "$THREADS" --json | field 'd["accuracy"]')
    p50[$level]=$(echo "$j" | field 'd["latency_ms"]["p50"]')
    min=$(echo "$j" | field 'd["latency_ms"]["min"]')
    tput=$(echo "$j" | field 'round(d["throughput"])')
    speed=$(awk -v a="${p50[O0]}" -v b="${p50[$level]}" 'BEGIN { printf "%.2fx", a / b }')
    echo "| $(basename "$RUN") | -$level | $batch | ${p50[$level]} | $min | $tput | $acc | $speed |"
  done
done
