#!/usr/bin/env bash
# pd-infer latency of a trained model as pd-train wrote it, four ways: op by op (-O0: pd-infer
# --no-lower); lowered for this machine at load without the portable passes (load-O0: pd-infer -O0, what
# pd-infer did by default before it optimised at load); optimised and lowered at load (load: pd-infer's
# default, -O2); and after pd-opt -O2 with the load-time lowering (-O2). At batch 1 and 64, with the test
# accuracy of each (they must agree within 0.001). The machine is shared and noisy: the four are timed
# in alternation for ROUNDS rounds, and the table gives the median over rounds of each round's p50 (and
# the smallest min); the speedup is against -O0.
#   usage: bench/infer_opt.sh RUN_DIR [THREADS] [ROUNDS]   (RUN_DIR from pd-train: model.pdmodel + config.yaml)
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=$1
THREADS=${2:-2}
ROUNDS=${3:-5}
PD_OPT=${PD_OPT:-build/tools/pd-opt}
PD_INFER=${PD_INFER:-build/tools/pd-infer}
"$PD_OPT" "$RUN/model.pdmodel" "$RUN/model_O2.pdmodel" -O2 --verify > /dev/null
source bench/common.sh  # field, median
LEVELS="O0 load-O0 load O2"
model_of() {
  case $1 in
    O2) echo "$RUN/model_O2.pdmodel" ;;
    load) echo "$RUN/model.pdmodel" ;;
    load-O0) echo "$RUN/model.pdmodel -O0" ;;
    *) echo "$RUN/model.pdmodel --no-lower" ;;
  esac
}
smallest() { python3 -c "import sys; print('%.4g' % min(float(v) for v in sys.argv[1:]))" "$@"; }

declare -A acc
for level in $LEVELS; do
  acc[$level]=$("$PD_INFER" $(model_of $level) --data "$RUN/config.yaml" --batch 500 --threads "$THREADS" --json | field 'd["accuracy"]')
done
echo "| model | run | batch | p50 ms (median of $ROUNDS) | min ms | samples/s at p50 | test acc | p50 speedup |"
echo "|---|---|---|---|---|---|---|---|"
for batch in 1 64; do
  declare -A p50s mins
  p50s=() mins=()
  for ((r = 0; r < ROUNDS; ++r)); do
    for level in $LEVELS; do
      j=$("$PD_INFER" $(model_of $level) --batch $batch --threads "$THREADS" --warmup 50 --repeat 300 --json)
      p50s[$level]+=" $(echo "$j" | field 'd["latency_ms"]["p50"]')"
      mins[$level]+=" $(echo "$j" | field 'd["latency_ms"]["min"]')"
    done
  done
  declare -A p50
  for level in $LEVELS; do
    # shellcheck disable=SC2086  # the lists are space-separated numbers
    p50[$level]=$(median ${p50s[$level]})
    # shellcheck disable=SC2086
    min=$(smallest ${mins[$level]})
    tput=$(awk -v b=$batch -v ms="${p50[$level]}" 'BEGIN { printf "%.0f", b * 1000 / ms }')
    speed=$(awk -v a="${p50[O0]}" -v b="${p50[$level]}" 'BEGIN { printf "%.2fx", a / b }')
    echo "| $(basename "$RUN") | $level | $batch | ${p50[$level]} | $min | $tput | ${acc[$level]} | $speed |"
  done
done
