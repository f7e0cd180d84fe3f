#!/usr/bin/env bash
# End-to-end checks of pd-infer on a model pd-train wrote: random inputs, accuracy on a slice of the
# Fashion-MNIST test set, --compare against its own and a perturbed output, and refusal of a truncated
# model file and of a wrong input name (exit 2, listing what the model expects).
source "$(dirname "$0")/common.sh"
PD_TRAIN=$1
PD_INFER=$2

"$PD_TRAIN" "$HERE/tiny_mlp.yaml" --out "$WORK/run" --limit 512 --epochs 1 --threads 1 --quiet || fail "training exited with $?"
MODEL=$WORK/run/model.pdmodel
for f in model.pdmodel model.pdiparams; do [ -s "$WORK/run/$f" ] || fail "pd-train did not write $f"; done

# 1. Random inputs: the latency report, and outputs written as NAME.npy.
out=$("$PD_INFER" "$MODEL" --batch 4 --warmup 1 --repeat 3 --threads 1 --output-dir "$WORK/out" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "random input: exit $rc: $out"
echo "$out" | grep -q "p50" && echo "$out" | grep -q "samples/s" || fail "random input: no latency report: $out"
[ -s "$WORK/out/logits.npy" ] || fail "random input: no logits.npy written"
out=$("$PD_INFER" "$MODEL" --repeat 2 --json 2>&1)
echo "$out" | grep -q '"latency_ms": {"min"' || fail "--json: $out"
# --profile: one row per op type the model runs. Loading lowers the tiny MLP (flatten, linear, relu,
# linear) for this machine: linear + relu become fused_linear; --no-lower runs it as it is.
out=$("$PD_INFER" "$MODEL" --repeat 3 --profile 2>&1)
for op in flatten fused_linear linear; do echo "$out" | grep -qE "^  $op +[0-9]" || fail "--profile: no '$op' row: $out"; done
echo "$out" | grep -qE "^  relu +[0-9]" && fail "--profile: relu was not fused at load: $out"
echo "$out" | grep -qE "^target +cpu-[a-z0-9]+, lowered at load: 4 ops in the file, 3 run" || fail "target line: $out"
out=$("$PD_INFER" "$MODEL" --repeat 3 --profile --no-lower 2>&1)
for op in flatten linear relu; do echo "$out" | grep -qE "^  $op +[0-9]" || fail "--no-lower --profile: no '$op' row: $out"; done
echo "$out" | grep -q "not lowered (--no-lower): 4 ops in the file, 4 run" || fail "--no-lower target line: $out"

# 2. Labelled test data: accuracy printed and plausible.
write_test_spec "$WORK/data.yaml" 1000
out=$("$PD_INFER" "$MODEL" --data "$WORK/data.yaml" --threads 1 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--data: exit $rc: $out"
acc=$(echo "$out" | sed -n 's/^accuracy *\([0-9.]*\).*/\1/p')
awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.5) }' || fail "--data: accuracy '${acc}' not > 0.5: $out"

# 3. --compare: its own output matches (exit 0); a perturbed copy does not (exit 1, max error and index).
"$PD_INFER" "$MODEL" --batch 4 --repeat 1 --compare "$WORK/out/logits.npy" >/dev/null 2>&1 || fail "--compare with its own output: exit $?"
# The last element (index [3, 9]) becomes 1000.0 (f32 little-endian 00 00 7a 44).
cp "$WORK/out/logits.npy" "$WORK/perturbed.npy"
size=$(stat -c %s "$WORK/perturbed.npy")
printf '\x00\x00\x7a\x44' | dd of="$WORK/perturbed.npy" bs=1 seek=$((size - 4)) conv=notrunc status=none
out=$("$PD_INFER" "$MODEL" --batch 4 --repeat 1 --compare "$WORK/perturbed.npy" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "--compare with a perturbed file: exit $rc, want 1"
echo "$out" | grep -q "MISMATCH (max abs error 1e+03 at \[3, 9\]" || fail "--compare message: $out"
out=$("$PD_INFER" "$MODEL" --batch 3 --repeat 1 --compare "$WORK/out/logits.npy" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "shape" || fail "--compare with another shape: exit $rc: $out"

# 4. A truncated model file is refused.
head -c 600 "$MODEL" > "$WORK/cut.pdmodel"
cp "$WORK/run/model.pdiparams" "$WORK/cut.pdiparams"
out=$("$PD_INFER" "$WORK/cut.pdmodel" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "pd-infer: error: .*truncated" || fail "truncated model: exit $rc: $out"

# 5. A wrong input name is refused, listing the expected inputs; so is a wrong shape.
out=$("$PD_INFER" "$MODEL" --input img="$WORK/out/logits.npy" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "no input 'img'.*image: f32\[-1, 1, 28, 28\]" || fail "wrong input name: exit $rc: $out"
out=$("$PD_INFER" "$MODEL" --input image="$WORK/out/logits.npy" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "shape \[4, 10\]" || fail "wrong input shape: exit $rc: $out"

[ $fails -eq 0 ] && echo "pd-infer end-to-end: all checks passed"
exit $fails
