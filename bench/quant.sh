#!/usr/bin/env bash
# int8 against f32 with pd-infer: a trained run's model after pd-opt -O2 (f32), and the same model
# quantized by pd-quant (u8 activations, percentile, s8 per-channel weights, 512 calibration samples)
# then pd-opt -O2 (pd-infer lowers its QDQ form to int8 kernels at load), and once more with
# --weight-bits 6 (the int8-w6 row: faster on AVX2 without VNNI, less precise weights). Prints the test
# accuracy of each on the full test set, the params file sizes, and pd-infer latency at batch 1 and 64
# (f32 twice: lowered at load and op by op), timed in alternation for ROUNDS rounds (median of each
# round's p50: the machine is shared and noisy).
# With ORT_PY set (a python with numpy, onnx and onnxruntime), a second table follows: the same model
# exported by pd-convert and quantized by onnxruntime's quantize_static with pd-quant's defaults (QDQ,
# u8 activations, percentile 99.99, s8 per-channel weights, the same 512 calibration samples), timed in
# onnxruntime the same way (bench/ort_quant.py), and a last table scores both int8 models against the
# f32 model's logits (top-1 agreement, SQNR). --method, --percentile, --samples and --batch among
# the PD_QUANT FLAGS are passed on to it (methods: percentile, minmax).
#   usage: [ORT_PY=PYTHON] bench/quant.sh RUN_DIR [THREADS] [ROUNDS] [PD_QUANT FLAGS...]   (RUN_DIR from pd-train)
#   tools: $PD_OPT, $PD_INFER, $PD_QUANT, $PD_CONVERT (default build/tools/...)
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=$1
THREADS=${2:-2}
ROUNDS=${3:-5}
shift $(($# < 3 ? $# : 3))
PD_OPT=${PD_OPT:-build/tools/pd-opt}
PD_INFER=${PD_INFER:-build/tools/pd-infer}
PD_QUANT=${PD_QUANT:-build/tools/pd-quant}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$PD_OPT" "$RUN/model.pdmodel" "$OUT/f32.pdmodel" -O2 > /dev/null
"$PD_QUANT" "$RUN/model.pdmodel" "$OUT/q.pdmodel" --calib "$RUN/config.yaml" --threads "$THREADS" "$@" | grep -E "^(int8 path|quantized)"
"$PD_OPT" "$OUT/q.pdmodel" "$OUT/int8.pdmodel" -O2 > /dev/null
runs="f32 f32-unlowered int8"
if [[ " $* " != *" --reduce-range "* && " $* " != *" --weight-bits"* ]]; then  # flags naming the bits: their row only
  "$PD_QUANT" "$RUN/model.pdmodel" "$OUT/q6.pdmodel" --calib "$RUN/config.yaml" --threads "$THREADS" "$@" --weight-bits 6 > /dev/null
  "$PD_OPT" "$OUT/q6.pdmodel" "$OUT/int8-w6.pdmodel" -O2 > /dev/null
  runs+=" int8-w6"
fi
source bench/common.sh  # field, median

# Two f32 rows: lowered at load as pd-infer runs it by default, and op by op (--no-lower). Which is
# faster depends on the host (Winograd against oneDNN's direct convolution); the speedup column is
# against the faster one.
declare -A model=([f32]=f32 [f32-unlowered]=f32 [int8]=int8 [int8-w6]=int8-w6) flags=([f32]="" [f32-unlowered]="--no-lower" [int8]="" [int8-w6]="")
echo "| run | batch | p50 ms (median of $ROUNDS) | speedup vs faster f32 | test acc | params KiB |"
echo "|---|---|---|---|---|---|"
for batch in 1 64; do
  declare -A p50s=()
  # At batch 1 a run is 0.1 ms: 2000 of them, or a round is a few ms and one busy moment moves its p50.
  counts=$([[ $batch == 1 ]] && echo "--warmup 100 --repeat 2000" || echo "--warmup 20 --repeat 200")
  for ((r = 0; r < ROUNDS; ++r)); do
    for m in $runs; do
      # shellcheck disable=SC2086  # flags are words
      p50s[$m]+=" $("$PD_INFER" "$OUT/${model[$m]}.pdmodel" ${flags[$m]} -b "$batch" --threads "$THREADS" $counts --json | field 'd["latency_ms"]["p50"]')"
    done
  done
  f32=$(python3 -c "import sys; print(min(float(v) for v in sys.argv[1:]))" "$(median ${p50s[f32]})" "$(median ${p50s[f32-unlowered]})")
  for m in $runs; do
    p50=$(median ${p50s[$m]})
    # shellcheck disable=SC2086
    acc=$("$PD_INFER" "$OUT/${model[$m]}.pdmodel" ${flags[$m]} --data "$RUN/config.yaml" --batch 500 --threads "$THREADS" --json | field 'd["accuracy"]')
    kib=$(($(stat -c %s "$OUT/${model[$m]}.pdiparams") / 1024))
    echo "| $m | $batch | $p50 | $(python3 -c "import sys; print('%.2fx' % (float(sys.argv[1]) / float(sys.argv[2])))" "$f32" "$p50") | $acc | $kib |"
  done
done

if [[ -n ${ORT_PY:-} ]]; then
  ort_flags=()
  for ((i = 1; i <= $#; ++i)); do
    case ${!i} in
      --method | --percentile | --samples | --batch) j=$((i + 1)) && ort_flags+=("${!i}" "${!j}") ;;
      --method=* | --percentile=* | --samples=* | --batch=*) ort_flags+=("${!i}") ;;
    esac
  done
  echo
  "$ORT_PY" bench/ort_quant.py "$RUN" "$THREADS" "$ROUNDS" --pd-convert "${PD_CONVERT:-build/tools/pd-convert}" \
    --pd-infer "$PD_INFER" --pd-int8 "$OUT/int8.pdmodel" "${ort_flags[@]}"
fi
