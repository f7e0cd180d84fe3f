#!/usr/bin/env bash
# End-to-end checks of pd-quant on a model pd-train wrote: calibrates on a Fashion-MNIST slice, writes a
# QDQ model with s8 weights (a params file under 30% of the f32 one) that pd-infer runs, with accuracy
# close to f32; bad methods, activation types and data specs exit 2 with a message and write nothing.
source "$(dirname "$0")/common.sh"
PD_TRAIN=$1
PD_QUANT=$2
PD_INFER=$3

"$PD_TRAIN" "$HERE/tiny_mlp.yaml" --out "$WORK/run" --limit 1024 --epochs 1 --threads 1 --quiet || fail "training exited with $?"
MODEL=$WORK/run/model.pdmodel
write_test_spec "$WORK/data.yaml" 1000

# 1. Quantize with --eval and --report: counts, sizes, the report table, accuracy within 0.03 of f32.
out=$("$PD_QUANT" "$MODEL" "$WORK/q.pdmodel" --calib "$WORK/data.yaml" --samples 256 --eval "$WORK/data.yaml" --report --threads 1 2>&1); rc=$?
[ $rc -eq 0 ] || fail "pd-quant: exit $rc: $out"
grep -q "^quantized  2 conv2d / linear ops: activations u8 (percentile), weights s8 per output channel" <<< "$out" || fail "summary: $out"
grep -q "^activation  *min  *max  *scale  *zero point" <<< "$out" || fail "--report table: $out"
f32=$(sed -n 's/^accuracy   f32 \([0-9.]*\), quantized \([0-9.]*\).*/\1/p' <<< "$out")
q=$(sed -n 's/^accuracy   f32 \([0-9.]*\), quantized \([0-9.]*\).*/\2/p' <<< "$out")
awk -v a="${f32:-0}" -v b="${q:-1}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0.5 && d <= 0.03) }' || fail "accuracy f32 '$f32' vs quantized '$q': $out"
full=$(stat -c %s "$WORK/run/model.pdiparams"); small=$(stat -c %s "$WORK/q.pdiparams")
[ $((small * 10)) -lt $((full * 3)) ] || fail "params $small bytes, f32 $full: not under 30%"

grep -q "^int8 path  " <<< "$out" || fail "no int8 path line: $out"

# 2. pd-infer runs the quantized model with no new flag and reports the same accuracy; lowered, its
# linears are int8 kernels (where oneDNN is built), unlowered it runs the QDQ form in f32.
out=$("$PD_INFER" "$WORK/q.pdmodel" --data "$WORK/data.yaml" --threads 1 2>&1) || fail "pd-infer on the QDQ model: $out"
grep -q "^accuracy   $q " <<< "$out" || fail "pd-infer accuracy differs from pd-quant's '$q': $out"
out=$("$PD_INFER" "$WORK/q.pdmodel" --threads 1 --repeat 2 --profile 2>&1) || fail "pd-infer --profile: $out"
if grep -q "quantized_linear" <<< "$out"; then
  grep -q "dequantize_linear" <<< "$out" && fail "the lowered model still dequantizes: $out"
else
  grep -q "dequantize_linear" <<< "$out" || fail "neither int8 kernels nor the QDQ form ran: $out"
fi

# --exclude naming every quantizable op leaves nothing to do: exit 2; --reduce-range says so in the summary.
out=$("$PD_QUANT" "$MODEL" "$WORK/e.pdmodel" --calib "$WORK/data.yaml" --samples 128 --exclude linear 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "no conv2d or linear .* (after --exclude)" <<< "$out" || fail "--exclude of every op: $rc $out"
out=$("$PD_QUANT" "$MODEL" "$WORK/r.pdmodel" --calib "$WORK/data.yaml" --samples 128 --reduce-range 2>&1) || fail "--reduce-range: $out"
grep -q "weights s8 at 7 bits per output channel" <<< "$out" || fail "--reduce-range summary: $out"

# Deterministic: the same data, options and thread count give the same files, bit for bit (the
# project's contract; a build without oneDNN sums its GEMMs differently on other thread counts).
mkdir -p "$WORK/a" "$WORK/b"
"$PD_QUANT" "$MODEL" "$WORK/a/q.pdmodel" --calib "$WORK/data.yaml" --samples 256 --threads 2 > /dev/null 2>&1 || fail "run a"
"$PD_QUANT" "$MODEL" "$WORK/b/q.pdmodel" --calib "$WORK/data.yaml" --samples 256 --threads 2 > /dev/null 2>&1 || fail "run b"
cmp -s "$WORK/a/q.pdmodel" "$WORK/b/q.pdmodel" && cmp -s "$WORK/a/q.pdiparams" "$WORK/b/q.pdiparams" || fail "two runs differ"

# 3. Other methods and s8 activations work; bad input exits 2 and writes nothing.
for m in minmax kl mse; do
  "$PD_QUANT" "$MODEL" "$WORK/$m.pdmodel" --calib "$WORK/data.yaml" --samples 128 --method $m --activations s8 > /dev/null 2>&1 || fail "--method $m --activations s8"
done
out=$("$PD_QUANT" "$MODEL" "$WORK/x.pdmodel" --calib "$WORK/data.yaml" --method entropy 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error: --method: unknown calibration method 'entropy' (valid: minmax, percentile, kl, mse)" <<< "$out" || fail "--method entropy: $rc $out"
out=$("$PD_QUANT" "$MODEL" "$WORK/x.pdmodel" --calib "$WORK/data.yaml" --activations u16 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error: --activations must be u8 or s8" <<< "$out" || fail "--activations u16: $rc $out"
out=$("$PD_QUANT" "$MODEL" "$WORK/x.pdmodel" --calib "$WORK/missing.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error: --calib .*missing.yaml: cannot open the file" <<< "$out" || fail "missing --calib: $rc $out"
out=$("$PD_QUANT" "$MODEL" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error:" <<< "$out" || fail "no output argument: $rc $out"
[ ! -e "$WORK/x.pdmodel" ] || fail "a refused run wrote its output"

[ $fails -eq 0 ] && echo "pd-quant: all checks passed"
exit $fails
