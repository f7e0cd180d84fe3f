#!/usr/bin/env bash
# The command line every tool shares: --version prints "TOOL VERSION" and exits 0; a number out of an
# option's range, too large for its type, or not finite is refused (exit 2) with a message that names
# the option, what it must be and what came, never a 309-digit bound or a silently clamped value.
#   usage: tool_flags_test.sh PD_TRAIN PD_INFER PD_OPT PD_QUANT PD_CONVERT PD_BENCH PD_CODEGEN
source "$(dirname "$0")/common.sh"

for tool in "$@"; do
  name=$(basename "$tool")
  out=$("$tool" --version 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -qE "^$name [0-9]+\.[0-9]+\.[0-9]+( \(git [^)]+\))?$" <<< "$out" || fail "$name --version: exit $rc: $out"
done

PD_INFER=$2 PD_OPT=$3 PD_QUANT=$4 PD_CONVERT=$5 PD_BENCH=$6
# expect_refused TOOL ARGS... -- MESSAGE: exit 2 with MESSAGE, and no number of 40 digits or more.
expect_refused() {
  local args=() msg
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  msg=$2
  out=$("${args[@]}" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qF -- "$msg" <<< "$out" && ! grep -qE "[0-9]{40}" <<< "$out" ||
    fail "$(basename "${args[0]}") ${args[*]:1}: exit $rc, want 2 and '$msg': $out"
}
expect_refused "$PD_INFER" m.pdmodel --repeat 99999999999999999999 -- \
  "--repeat: must be a positive integer, got 99999999999999999999: too large (the largest allowed is 9223372036854775807)"
expect_refused "$PD_INFER" m.pdmodel --repeat 0 -- "--repeat: must be a positive integer, got 0"
expect_refused "$PD_INFER" m.pdmodel --warmup -1 -- "--warmup: must be a non-negative integer, got -1"
expect_refused "$PD_INFER" m.pdmodel --threads 4096x -- "--threads: must be a positive integer, got '4096x'"
expect_refused "$PD_INFER" m.pdmodel --threads 99999999999 -- "--threads: must be a positive integer, got 99999999999: too large"
expect_refused "$PD_INFER" m.pdmodel --seed -1 -- "--seed: must be a non-negative integer, got -1"
expect_refused "$PD_INFER" m.pdmodel --rtol nan -- "--rtol: must be a finite number >= 0, got nan (not a finite number)"
expect_refused "$PD_OPT" m.pdmodel -O 4 -- "-O: must be an optimisation level from 0 to 3, got 4"
expect_refused "$PD_OPT" m.pdmodel --atol -1e-3 -- "--atol: must be a finite number >= 0, got -1e-3"
expect_refused "$PD_QUANT" m.pdmodel o.pdmodel --percentile 0 -- "--percentile: must be a percentile in (50, 100] (the share of values inside the range), got 0"
expect_refused "$PD_QUANT" m.pdmodel o.pdmodel --max-drop -1 -- "--max-drop: must be an absolute accuracy drop in [0, 1), got -1"
expect_refused "$PD_QUANT" m.pdmodel o.pdmodel --samples 1e3 -- "--samples: must be a positive integer, got '1e3'"
expect_refused "$PD_CONVERT" m.onnx o.pdmodel --opset 99 -- "--opset: must be an ONNX opset from 11 to 17, got 99"
expect_refused "$PD_CONVERT" m.onnx o.pdmodel --rtol inf -- "--rtol: must be a finite number >= 0, got inf (not a finite number)"
expect_refused "$PD_BENCH" relu --budget-ms 0 -- "--budget-ms: must be a finite number > 0, got 0"
expect_refused "$PD_BENCH" relu --min-reps 99999999999999999999 -- "--min-reps: must be a positive integer, got 99999999999999999999: too large"
expect_refused "$PD_BENCH" relu --threshold nan -- "--threshold: must be a finite number >= 0, got nan"

[ $fails -eq 0 ] && echo "tool flags: all checks passed"
exit $fails
