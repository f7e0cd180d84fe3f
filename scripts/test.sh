#!/usr/bin/env bash
# The README's test command, in labelled suites (docs/testing.md):
#   main      (default; what CI runs) set up, build, run every test: the oneDNN + CUDA configuration in
#             build/; GPU tests (label gpu) report as skipped on a machine without one.
#   sanitize  a second configuration without oneDNN and CUDA (every op on its reference kernel, so that
#             the optional backends stay optional), built with AddressSanitizer and UndefinedBehaviorSanitizer,
#             every report fatal, in build-asan/. About 35 minutes from scratch on 2 cores, which CI's
#             30-minute budget has no room for beside main: run it before landing changes to kernels,
#             parsers, I/O or memory handling.
#   all       both, main first.
#   usage: bash scripts/test.sh [main|sanitize|all]
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:-main}
case $suite in
  main | sanitize | all) ;;
  *) echo "scripts/test.sh: unknown suite '$suite' (expected main, sanitize or all)" >&2 && exit 2 ;;
esac
bash scripts/setup.sh
if [[ $suite != sanitize ]]; then
  bash scripts/build.sh
  ctest --test-dir build --output-on-failure -j "$(nproc)"
fi
if [[ $suite != main ]]; then
  bash scripts/build.sh build-asan -DPD_WITH_ONEDNN=OFF -DPD_WITH_CUDA=OFF -DPD_SANITIZE=address,undefined
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
fi
