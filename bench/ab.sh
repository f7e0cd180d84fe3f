#!/usr/bin/env bash
# A/B of two builds of paddle-cpp on this machine, interleaved round by round (the machine is shared
# and noisy): training samples/s of LeNet and the MLP (2 epochs, 2 threads; final test accuracy and loss,
# which must agree when the change is not meant to alter numbers), and pd-infer p50 latency of trained
# models after each build's own pd-opt -O2 (whatever that build does with it at load), at batch 1 and 64.
# For refactors that must not change speed.
#   usage: bench/ab.sh OLD_BUILD_DIR NEW_BUILD_DIR [ROUNDS] [RUN_DIR...]
#   (RUN_DIRs from pd-train hold model.pdmodel; default /tmp/lenet_bench /tmp/resnet_bench)
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1 NEW=$2
ROUNDS=${3:-3}
shift $(( $# >= 3 ? 3 : $# ))
RUNS=${*:-/tmp/lenet_bench /tmp/resnet_bench}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
median() { python3 -c "import statistics,sys; print('%.5g' % statistics.median(float(v) for v in sys.argv[1:]))" "$@"; }
source bench/common.sh  # field, median

echo "| what | old | new | new / old |"
echo "|---|---|---|---|"
for arch in lenet mlp; do
  declare -A sps=([old]="" [new]="") last=()
  for ((r = 0; r < ROUNDS; ++r)); do
    for side in old new; do
      dir=$OLD; [ $side = new ] && dir=$NEW
      "$dir/tools/pd-train" "examples/${arch}_fmnist.yaml" --epochs 2 --threads 2 --out "$OUT/$side-$arch" --quiet --json > "$OUT/m.jsonl"
      sps[$side]+=" $(awk -F'"samples_per_s": ' '{split($2, a, ","); s += a[1]; n++} END {printf "%.0f", s / n}' "$OUT/m.jsonl")"
      last[$side]=$(tail -1 "$OUT/m.jsonl" | sed 's/.*"test_loss": \([0-9.]*\), "test_acc": \([0-9.]*\).*/loss \1 acc \2/')
      rm -rf "$OUT/$side-$arch"
    done
  done
  # shellcheck disable=SC2086
  o=$(median ${sps[old]}) n=$(median ${sps[new]})
  echo "| $arch training samples/s (median of $ROUNDS) | $o | $n | $(awk -v a="$n" -v b="$o" 'BEGIN { printf "%.3f", a / b }') |"
  echo "| $arch after 2 epochs | ${last[old]} | ${last[new]} | $([ "${last[old]}" = "${last[new]}" ] && echo same || echo DIFFERENT) |"
done
for run in $RUNS; do
  for side in old new; do
    dir=$OLD; [ $side = new ] && dir=$NEW
    "$dir/tools/pd-opt" "$run/model.pdmodel" "$OUT/$side.pdmodel" -O2 > /dev/null
  done
  for batch in 1 64; do
    declare -A p50=([old]="" [new]="")
    for ((r = 0; r < ROUNDS; ++r)); do
      for side in old new; do
        dir=$OLD; [ $side = new ] && dir=$NEW
        p50[$side]+=" $("$dir/tools/pd-infer" "$OUT/$side.pdmodel" --batch $batch --threads 2 --warmup 50 --repeat 300 --json | field 'd["latency_ms"]["p50"]')"
      done
    done
    # shellcheck disable=SC2086
    o=$(median ${p50[old]}) n=$(median ${p50[new]})
    echo "| $(basename "$run") -O2 batch $batch p50 ms (median of $ROUNDS) | $o | $n | $(awk -v a="$n" -v b="$o" 'BEGIN { printf "%.3f", a / b }') |"
  done
done
