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
echo "$out" | grep -qE "^target +cpu-[a-z0-9]+, optimised \(-O2\) and lowered at load: 4 ops in the file, 3 run" || fail "target line: $out"
# Inference keeps OpenMP's team asleep (its barriers wait out a busy process's time slices): the
# residual example's convolutions and linear run as one-thread primitives on the kernels' pool, at
# batch 1 and 64; its ops as they are (--no-lower) use the team at batch 1, which the count shows.
"$PD_TRAIN" "$HERE/../../examples/resnet_fmnist.yaml" --out "$WORK/res" --limit 64 --epochs 1 --threads 2 --quiet || fail "training the residual example exited with $?"
for b in 1 64; do
  out=$("$PD_INFER" "$WORK/res" --batch $b --threads 2 --repeat 3 --profile 2>&1)
  echo "$out" | grep -q "OpenMP's team ran 0.0 primitives a run$" || fail "batch $b: OpenMP's team used: $out"
done
if [ "${PD_TEST_ONEDNN:-1}" != 0 ]; then  # without oneDNN nothing runs on OpenMP's team
  out=$("$PD_INFER" "$WORK/res" --threads 2 --repeat 3 --profile --no-lower 2>&1)
  echo "$out" | grep -qE "OpenMP's team ran [1-9][0-9.]* primitives a run \(beside a busy process" || fail "--no-lower: no team use counted: $out"
fi
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

# 6. --compare names the element with the largest absolute error, and apart from it the one furthest
# beyond its tolerance: A gets +50 on a small logit (within rtol 10), B the small target 0.05.
picked=$(python3 - "$WORK/out/logits.npy" "$WORK/two.npy" <<'PY'
import struct, sys
raw = open(sys.argv[1], 'rb').read()
off = 10 + struct.unpack('<H', raw[8:10])[0]
n = (len(raw) - off) // 4
g = list(struct.unpack('<%df' % n, raw[off:]))
a = min(range(n), key=lambda i: abs(g[i]))
b = max((i for i in range(n) if i != a), key=lambda i: abs(g[i]))
w = g[:]
w[a], w[b] = g[a] + 50, 0.05
open(sys.argv[2], 'wb').write(raw[:off] + struct.pack('<%df' % n, *w))
print('%d, %d;%d, %d' % (a // 10, a % 10, b // 10, b % 10))
PY
)
out=$("$PD_INFER" "$MODEL" --batch 4 --repeat 1 --compare "$WORK/two.npy" --rtol 10 --atol 0 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "max abs error 50 at \[${picked%;*}\]" <<< "$out" && grep -q "furthest beyond its tolerance: \[${picked#*;}\]" <<< "$out" ||
  fail "--compare: max abs error at [${picked%;*}], worst against the tolerance at [${picked#*;}]: exit $rc: $out"
# Tolerances that would make every comparison pass (nan) or mean nothing (negative, inf) are refused.
for tol in "--rtol nan" "--atol nan" "--rtol -1" "--atol inf" "--rtol 1e999"; do
  out=$("$PD_INFER" "$MODEL" --batch 4 --repeat 1 --compare "$WORK/two.npy" $tol 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "pd-infer: error: ${tol%% *}: must be a finite number >= 0" <<< "$out" || fail "$tol: exit $rc: $out"
done

# 7. --data refuses a label outside the model's 10 classes, naming the file, the sample and the label.
python3 - "$WORK/feat.npy" "$WORK/lab.npy" <<'PY'
import sys
def npy(path, descr, shape, data):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, ''.join('%d,' % d for d in shape))
    h += ' ' * (63 - len(h) % 64) + '\n'
    open(path, 'wb').write(b'\x93NUMPY\x01\x00' + len(h).to_bytes(2, 'little') + h.encode() + data)
npy(sys.argv[1], '<f4', (3, 1, 28, 28), bytes(4 * 3 * 784))
npy(sys.argv[2], '<i8', (3,), b''.join(v.to_bytes(8, 'little', signed=True) for v in (1, 12, 0)))
PY
printf 'data:\n  test: {format: npy, features: %s, labels: %s}\n' "$WORK/feat.npy" "$WORK/lab.npy" > "$WORK/badlabels.yaml"
out=$("$PD_INFER" "$MODEL" --data "$WORK/badlabels.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "lab.npy: sample 1 has label 12, but the model has 10 classes (labels 0 to 9)" <<< "$out" ||
  fail "--data with label 12: exit $rc: $out"

# --device: on a GPU the accuracy of the CPU run (to a near-tie or two); without one, a clear refusal.
out=$("$PD_INFER" "$MODEL" --data "$WORK/data.yaml" --device cuda 2>&1); rc=$?
if [ $rc -eq 0 ]; then
  gacc=$(echo "$out" | sed -n 's/^accuracy *\([0-9.]*\).*/\1/p')
  awk -v a="${gacc:-0}" -v b="$acc" 'BEGIN { d = a - b; exit !(d < 0.0025 && d > -0.0025) }' ||
    fail "--device cuda: accuracy '$gacc', on the CPU $acc: $out"
else
  [ $rc -eq 2 ] && echo "$out" | grep -qE "no CUDA backend|no usable CUDA GPU" || fail "--device cuda: exit $rc: $out"
fi
out=$("$PD_INFER" "$MODEL" --device tpu 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "expected cpu, cuda or cuda:N" <<< "$out" || fail "--device tpu: exit $rc: $out"

[ $fails -eq 0 ] && echo "pd-infer end-to-end: all checks passed"
exit $fails
