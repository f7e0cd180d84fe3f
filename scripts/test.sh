#!/usr/bin/env bash
# The README's test command: set up, build, run every test; then the same for a build without oneDNN
# (PD_WITH_ONEDNN=OFF: every op on its reference kernel), so that the optional backend stays optional.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
bash scripts/build.sh build-noonednn -DPD_WITH_ONEDNN=OFF
ctest --test-dir build-noonednn --output-on-failure -j "$(nproc)"
