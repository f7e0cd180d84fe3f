#!/usr/bin/env bash
# Configures and builds (Release with debug info, Ninja, ccache when present).
#   usage: scripts/build.sh [BUILD_DIR (default build)] [CMAKE_OPTIONS...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
