#!/usr/bin/env bash
# winograd_conv2d against oneDNN's direct conv2d on the same 3x3, padding-1 convolutions (ResNet's
# stride-1 convs at batch 64 and 1), both timed by pd-bench, alternating for ROUNDS rounds (the host is
# shared and noisy); prints a markdown table of the median over rounds of pd-bench's median ms, and the
# speedup. The Winograd weight is random: time does not depend on its values.
#   usage: bench/winograd.sh [THREADS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
ROUNDS=${2:-5}
PD_BENCH=${PD_BENCH:-build/tools/pd-bench}
median() { python3 -c "import statistics,sys; print(statistics.median(float(v) for v in sys.argv[1:]))" "$@"; }
median_ms() { "$PD_BENCH" "$@" --threads "$THREADS" --format json | python3 -c "import json,sys; print(json.load(sys.stdin)['results'][0]['median_ms'])"; }
echo "| input | channels | oneDNN conv2d ms | winograd_conv2d ms | speedup |"
echo "|---|---|---|---|---|"
for problem in 64x32x28x28:32 64x64x14x14:64 64x128x7x7:128 1x32x28x28:32 1x64x14x14:64 1x128x7x7:128; do
  x=${problem%%:*} k=${problem##*:}
  c=$(echo "$x" | cut -dx -f2)
  directs="" winos=""
  for ((r = 0; r < ROUNDS; ++r)); do
    directs+=" $(median_ms conv2d --input x="$x" --input weight="${k}x${c}x3x3" --input bias="$k" --attr padding=1,1 --direction fwd)"
    winos+=" $(median_ms winograd_conv2d --input x="$x" --input weight="36x${c}x${k}" --input bias="$k" --attr padding=1,1)"
  done
  # shellcheck disable=SC2086  # space-separated numbers
  direct=$(median $directs) wino=$(median $winos)
  awk -v x="$x" -v c="$c" -v k="$k" -v a="$direct" -v b="$wino" \
    'BEGIN { printf "| %s | %s -> %s | %.3g | %.3g | %.2fx |\n", x, c, k, a, b, a / b }'
done
