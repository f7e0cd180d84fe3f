#!/usr/bin/env bash
# End-to-end checks of pd-quant on a model pd-train wrote: calibrates on a Fashion-MNIST slice, writes a
# QDQ model with s8 weights (a params file under 30% of the f32 one) that pd-infer runs, with accuracy
# close to f32; the statistics cache; --max-drop's fallback table and exit 1; --weight-only; bad
# methods, activation types and data specs exit 2 with a message and write nothing.
source "$(dirname "$0")/common.sh"
export XDG_CACHE_HOME=$WORK/cache  # the statistics cache goes to the scratch directory
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
grep -q "^activation  *min  *max  *scale  *zero point  read by" <<< "$out" || fail "--report table: $out"
grep -Eq "^[^ ]+ .* fc1$" <<< "$out" || fail "--report: no activation read by fc1: $out"
grep -Eq "^[^ ]+ .* logits$" <<< "$out" || fail "--report: no activation read by logits: $out"
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
# A layer's name from the model YAML excludes it; a name that matches no layer is an error listing them.
out=$("$PD_QUANT" "$MODEL" "$WORK/e.pdmodel" --calib "$WORK/data.yaml" --samples 128 --exclude fc1 2>&1) || fail "--exclude fc1: $out"
grep -q "^quantized  1 conv2d / linear ops" <<< "$out" || fail "--exclude fc1 left $out"
out=$("$PD_QUANT" "$MODEL" "$WORK/e2.pdmodel" --calib "$WORK/data.yaml" --samples 128 --exclude fc1,fc_1 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "exclude fc_1: names no conv2d or linear op .* quantizable layers are fc1.weight, logits.weight" <<< "$out" ||
  fail "--exclude of a misspelt layer: $rc $out"
[ -e "$WORK/e2.pdmodel" ] && fail "--exclude of a misspelt layer wrote a model"
out=$("$PD_QUANT" "$MODEL" "$WORK/r.pdmodel" --calib "$WORK/data.yaml" --samples 128 --reduce-range 2>&1) || fail "--reduce-range: $out"
grep -q "weights s8 at 7 bits per output channel" <<< "$out" || fail "--reduce-range summary: $out"
# --weight-bits 6 (faster on AVX2 without VNNI): said in the summary and the model's metadata, and the
# model runs; bits outside 6..8, or with --reduce-range, exit 2.
out=$("$PD_QUANT" "$MODEL" "$WORK/w6.pdmodel" --calib "$WORK/data.yaml" --samples 128 --weight-bits 6 2>&1) || fail "--weight-bits 6: $out"
grep -q "weights s8 at 6 bits per output channel" <<< "$out" || fail "--weight-bits 6 summary: $out"
grep -q -- "--weight-bits 6" "$WORK/w6.pdmodel" || fail "--weight-bits 6 not in the model's metadata"
"$PD_INFER" "$WORK/w6.pdmodel" --data "$WORK/data.yaml" --threads 1 > /dev/null 2>&1 || fail "pd-infer on the 6-bit model"
for bad in "--weight-bits 5" "--weight-bits 9" "--weight-bits 6 --reduce-range"; do
  # shellcheck disable=SC2086  # the flags are words
  out=$("$PD_QUANT" "$MODEL" "$WORK/wb.pdmodel" --calib "$WORK/data.yaml" $bad 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "$bad: exit $rc, want 2: $out"
  [ -e "$WORK/wb.pdmodel" ] && fail "$bad wrote a model"
done

# Deterministic: the same data, options and thread count give the same files, bit for bit (the
# project's contract; a build without oneDNN sums its GEMMs differently on other thread counts).
mkdir -p "$WORK/a" "$WORK/b"
"$PD_QUANT" "$MODEL" "$WORK/a/q.pdmodel" --calib "$WORK/data.yaml" --samples 256 --threads 2 > /dev/null 2>&1 || fail "run a"
"$PD_QUANT" "$MODEL" "$WORK/b/q.pdmodel" --calib "$WORK/data.yaml" --samples 256 --threads 2 > /dev/null 2>&1 || fail "run b"
cmp -s "$WORK/a/q.pdmodel" "$WORK/b/q.pdmodel" && cmp -s "$WORK/a/q.pdiparams" "$WORK/b/q.pdiparams" || fail "two runs differ"

# 3. The statistics cache: a second run on the same model and data reads the statistics instead of
# running the model, and writes the same files; --no-cache does neither.
"$PD_QUANT" "$MODEL" "$WORK/c1.pdmodel" --calib "$WORK/data.yaml" --samples 256 --threads 2 > /dev/null 2>&1 || fail "cache run 1"
out=$("$PD_QUANT" "$MODEL" "$WORK/c2.pdmodel" --calib "$WORK/data.yaml" --samples 256 --threads 2 2>&1) || fail "cache run 2: $out"
grep -q "^calib      256 samples: statistics read from the cache $WORK/cache/pd-quant/" <<< "$out" || fail "cache not used: $out"
cmp -s "$WORK/c1.pdiparams" "$WORK/c2.pdiparams" || fail "the cached statistics gave other params"
out=$("$PD_QUANT" "$MODEL" "$WORK/c3.pdmodel" --calib "$WORK/data.yaml" --samples 256 --threads 2 --no-cache 2>&1) || fail "--no-cache: $out"
grep -q "^calib      256 samples (4 batches)$" <<< "$out" || fail "--no-cache line: $out"
for f in "$WORK"/cache/pd-quant/*.pdstats; do printf 'garbage' > "$f"; done  # a damaged cache is ignored
out=$("$PD_QUANT" "$MODEL" "$WORK/c4.pdmodel" --calib "$WORK/data.yaml" --samples 256 --threads 2 2>&1) || fail "damaged cache: $out"
grep -q "warning: not using the statistics cache" <<< "$out" || fail "damaged cache not reported: $out"
cmp -s "$WORK/c1.pdiparams" "$WORK/c4.pdiparams" || fail "a damaged cache changed the result"

# 4. --max-drop: a per-layer table (sensitivity alone, f32 time share, kept or fell back). Clipping at
# the 50.1th percentile ruins every layer: no model meets a zero budget, so exit 1 and nothing written.
out=$("$PD_QUANT" "$MODEL" "$WORK/m.pdmodel" --calib "$WORK/data.yaml" --samples 256 --percentile 50.1 --eval "$WORK/data.yaml" --max-drop 0 --threads 1 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "no quantized model meets --max-drop 0" <<< "$out" || fail "unmeetable budget: $rc $out"
grep -q "^layer weight (alone int8) *type *accuracy *vs f32 *output err *f32 time *kept" <<< "$out" || fail "no table: $out"
grep -q "^fc1.weight *linear .*%  \(int8\|f32 (fell back)\)" <<< "$out" || fail "no fc1 row: $out"
[ ! -e "$WORK/m.pdmodel" ] || fail "a missed budget wrote its output"
# With 6-bit weights the sensitive layers get 8-bit weights back first, and only then fall back to f32:
# where nothing meets the budget, the last model tried has the least sensitive layer still int8 at 8 bits.
out=$("$PD_QUANT" "$MODEL" "$WORK/m.pdmodel" --calib "$WORK/data.yaml" --samples 256 --percentile 50.1 --eval "$WORK/data.yaml" --max-drop 0 --weight-bits 6 --threads 1 2>&1); rc=$?
[ $rc -eq 1 ] || fail "unmeetable budget at 6 bits: $rc $out"
[ "$(grep -c '%  int8 at 8 bits$' <<< "$out")" -eq 1 ] && [ "$(grep -c '%  f32 (fell back)$' <<< "$out")" -eq 1 ] ||
  fail "6-bit fallback order: $out"
# A generous budget is met with every layer int8, and the table says so.
out=$("$PD_QUANT" "$MODEL" "$WORK/m.pdmodel" --calib "$WORK/data.yaml" --samples 256 --eval "$WORK/data.yaml" --max-drop 0.2 --threads 1 2>&1) || fail "--max-drop 0.2: $out"
[ "$(grep -c '%  int8$' <<< "$out")" -eq 2 ] || fail "--max-drop 0.2 fell back: $out"
out=$("$PD_QUANT" "$MODEL" "$WORK/x.pdmodel" --calib "$WORK/data.yaml" --max-drop 0.01 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "max-drop needs --eval" <<< "$out" || fail "--max-drop without --eval: $rc $out"

# 5. --weight-only: no calibration, s8 linear weights, activations f32; lowered to weight_only_linear.
out=$("$PD_QUANT" "$MODEL" "$WORK/w.pdmodel" --weight-only --eval "$WORK/data.yaml" --threads 1 2>&1) || fail "--weight-only: $out"
grep -q "^quantized  2 linear / matmul weights: s8 per output channel, activations f32 (weight-only)" <<< "$out" || fail "weight-only summary: $out"
wf32=$(sed -n 's/^accuracy   f32 \([0-9.]*\), quantized \([0-9.]*\).*/\1/p' <<< "$out")
wq=$(sed -n 's/^accuracy   f32 \([0-9.]*\), quantized \([0-9.]*\).*/\2/p' <<< "$out")
awk -v a="${wf32:-0}" -v b="${wq:-1}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01) }' || fail "weight-only accuracy '$wf32' vs '$wq'"
small=$(stat -c %s "$WORK/w.pdiparams")
[ $((small * 10)) -lt $((full * 3)) ] || fail "weight-only params $small bytes, f32 $full: not under 30%"
out=$("$PD_INFER" "$WORK/w.pdmodel" --threads 1 --repeat 2 --profile 2>&1) || fail "pd-infer on the weight-only model: $out"
grep -q "weight_only_linear  *2 " <<< "$out" || fail "weight_only_linear did not run: $out"

# 6. Other methods and s8 activations work; bad input exits 2 and writes nothing.
for m in minmax kl mse; do
  "$PD_QUANT" "$MODEL" "$WORK/$m.pdmodel" --calib "$WORK/data.yaml" --samples 128 --method $m --activations s8 > /dev/null 2>&1 || fail "--method $m --activations s8"
done
out=$("$PD_QUANT" "$MODEL" "$WORK/x.pdmodel" --calib "$WORK/data.yaml" --method entropy 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error: --method: unknown calibration method 'entropy' (valid: minmax, percentile, kl, mse)" <<< "$out" || fail "--method entropy: $rc $out"
out=$("$PD_QUANT" "$MODEL" "$WORK/x.pdmodel" --calib "$WORK/data.yaml" --percentile 50 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error: --percentile: must be a percentile in (50, 100\]" <<< "$out" && ! grep -q "^calib" <<< "$out" ||
  fail "--percentile 50 (refused before calibrating): $rc $out"
out=$("$PD_QUANT" "$MODEL" "$WORK/x.pdmodel" --calib "$WORK/data.yaml" --activations u16 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error: --activations must be u8 or s8" <<< "$out" || fail "--activations u16: $rc $out"
out=$("$PD_QUANT" "$MODEL" "$WORK/x.pdmodel" --calib "$WORK/missing.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error: --calib .*missing.yaml: cannot open the file" <<< "$out" || fail "missing --calib: $rc $out"
out=$("$PD_QUANT" "$MODEL" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-quant: error:" <<< "$out" || fail "no output argument: $rc $out"
[ ! -e "$WORK/x.pdmodel" ] || fail "a refused run wrote its output"

[ $fails -eq 0 ] && echo "pd-quant: all checks passed"
exit $fails
