#!/usr/bin/env bash
# A coverage-guided campaign with libFuzzer on one fuzz target (docs/testing.md).
#   usage: scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAGS...]     e.g. scripts/fuzz.sh fuzz_npy 600
# Configures build-fuzz with clang and PD_FUZZ=ON (ASan + UBSan) if needed, builds TARGET, and runs it on a
# copy of tests/fuzz/corpus/TARGET in build-fuzz/campaigns/TARGET, so the committed corpus is never
# written to. Crash inputs land in build-fuzz/campaigns/TARGET/artifacts; to keep one as a regression
# input, copy it into tests/fuzz/corpus/TARGET/ (and add a unit test).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 2 ]]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAGS...]" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
if [[ ! -d tests/fuzz/corpus/$target ]]; then
  echo "scripts/fuzz.sh: no target '$target' (have: $(ls tests/fuzz/corpus | grep -v driver_selftest | tr '\n' ' '))" >&2
  exit 2
fi
dir=build-fuzz
if [[ ! -f $dir/CMakeCache.txt ]]; then
  CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPD_FUZZ=ON \
    -DPD_WITH_CUDA=OFF >/dev/null
fi
cmake --build "$dir" --target "$target" -j "${PD_FUZZ_JOBS:-$(nproc)}"
work=$dir/campaigns/$target
mkdir -p "$work/corpus" "$work/artifacts"
cp -n tests/fuzz/corpus/"$target"/* "$work/corpus/" 2>/dev/null || true
# The work corpus grows across campaigns; -rss_limit_mb catches inputs that make a reader allocate wildly.
exec "$dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus"
