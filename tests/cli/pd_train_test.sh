#!/usr/bin/env bash
# End-to-end checks of pd-train on a slice of Fashion-MNIST: the loss drops, the run directory is
# complete, a stopped-and-resumed run ends bit-identical to an uninterrupted one, and broken YAML and
# data files are refused with a clear message and exit code 2.
source "$(dirname "$0")/common.sh"
PD_TRAIN=$(realpath "$1")
YAML=$HERE/tiny_mlp.yaml

# 1. Train; the loss must drop and every file must be there.
"$PD_TRAIN" "$YAML" --out "$WORK/full" --limit 1024 --threads 1 --quiet || fail "training exited with $?"
for f in metrics.jsonl plot.svg config.yaml model.pdparams checkpoint.pdckpt; do
  [ -s "$WORK/full/$f" ] || fail "run directory lacks $f"
done
[ "$(wc -l < "$WORK/full/metrics.jsonl")" -eq 3 ] || fail "metrics.jsonl should have 3 lines"
first=$(head -1 "$WORK/full/metrics.jsonl" | sed 's/.*"train_loss": \([0-9.]*\).*/\1/')
last=$(tail -1 "$WORK/full/metrics.jsonl" | sed 's/.*"train_loss": \([0-9.]*\).*/\1/')
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "train loss did not drop ($first -> $last)"
grep -q '"test_acc"' "$WORK/full/metrics.jsonl" || fail "metrics.jsonl lacks test_acc"
grep -q '<svg' "$WORK/full/plot.svg" || fail "plot.svg is not an SVG"

# 2. Stop after epoch 1, resume: bit-identical final model.
"$PD_TRAIN" "$YAML" --out "$WORK/split" --limit 1024 --threads 1 --quiet --stop-after-epoch 1 || fail "stop-after-epoch exited with $?"
[ ! -e "$WORK/split/model.pdparams" ] || fail "a stopped run should not write the final model"
"$PD_TRAIN" "$YAML" --out "$WORK/split" --limit 1024 --threads 1 --quiet --resume || fail "resume exited with $?"
cmp -s "$WORK/full/model.pdparams" "$WORK/split/model.pdparams" || fail "resumed run differs from the uninterrupted run"
[ "$(wc -l < "$WORK/split/metrics.jsonl")" -eq 3 ] || fail "resumed metrics.jsonl should have 3 lines"

# 2b. Ctrl-C in the middle of an epoch: exit 130 after a checkpoint; the resumed run ends bit-identical.
"$PD_TRAIN" "$YAML" --out "$WORK/full2" --limit 20000 --threads 1 --quiet || fail "second full run exited with $?"
"$PD_TRAIN" "$YAML" --out "$WORK/int" --limit 20000 --threads 1 --quiet &
pid=$!
for _ in $(seq 1 400); do
  [ -s "$WORK/int/metrics.jsonl" ] && break
  sleep 0.01
done
kill -INT $pid 2>/dev/null
wait $pid; rc=$?
if [ $rc -eq 130 ]; then
  [ -s "$WORK/int/checkpoint.pdckpt" ] || fail "no checkpoint after SIGINT"
  "$PD_TRAIN" "$YAML" --out "$WORK/int" --limit 20000 --threads 1 --quiet --resume || fail "resume after SIGINT exited with $?"
  cmp -s "$WORK/full2/model.pdparams" "$WORK/int/model.pdparams" || fail "run resumed after SIGINT differs from the uninterrupted run"
  # The interrupted epoch's train_loss counts the batches before the interrupt too.
  diff <(sed 's/"samples_per_s.*"lr"/"lr"/' "$WORK/full2/metrics.jsonl") <(sed 's/"samples_per_s.*"lr"/"lr"/' "$WORK/int/metrics.jsonl") >/dev/null ||
    fail "metrics after SIGINT and resume differ from the uninterrupted run's"
elif [ $rc -eq 0 ]; then
  echo "note: the run finished before SIGINT arrived; interrupt check skipped"
else
  fail "SIGINT: exit $rc, want 130"
fi

# 3. Resuming with a changed model is refused.
sed 's/out_features: 32/out_features: 16/' "$YAML" > "$WORK/changed.yaml"
out=$("$PD_TRAIN" "$WORK/changed.yaml" --out "$WORK/split" --limit 1024 --resume 2>&1); rc=$?
[ $rc -eq 2 ] || fail "resume with a changed model: exit $rc, want 2"
echo "$out" | grep -q "different model" || fail "resume with a changed model: message was: $out"

# 4. Broken YAML: file, line and key in the message, exit 2.
sed 's/type: relu/type: relux/' "$YAML" > "$WORK/bad_layer.yaml"
out=$("$PD_TRAIN" "$WORK/bad_layer.yaml" --check 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unknown layer: exit $rc, want 2"
echo "$out" | grep -q "bad_layer.yaml:9:.*unknown layer type 'relux'" || fail "unknown layer: message was: $out"
sed 's/epochs: 3/epochs: three/' "$YAML" > "$WORK/bad_value.yaml"
out=$("$PD_TRAIN" "$WORK/bad_value.yaml" --check 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "bad_value.yaml:24:.*epochs.*expected an integer" || fail "bad value: exit $rc, message: $out"
(cat "$YAML"; echo "  sharding: optimizer_states") > "$WORK/bad_sharding.yaml"
out=$("$PD_TRAIN" "$WORK/bad_sharding.yaml" --check 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "bad_sharding.yaml:[0-9]*:.*expected none or optimizer_state, got 'optimizer_states'" ||
  fail "bad sharding: exit $rc, message: $out"
(cat "$YAML"; echo "  amp: {dtype: fp8}") > "$WORK/bad_amp.yaml"
out=$("$PD_TRAIN" "$WORK/bad_amp.yaml" --check 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "bad_amp.yaml:[0-9]*:.*amp.dtype': expected bf16 or f16, got 'fp8'" ||
  fail "bad amp dtype: exit $rc, message: $out"
# Mixed precision needs the GPU's bf16 / f16 products: on the CPU it is refused before training.
(cat "$YAML"; echo "  amp: {dtype: bf16, level: O2}") > "$WORK/amp_cpu.yaml"
out=$("$PD_TRAIN" "$WORK/amp_cpu.yaml" --out "$WORK/amp_cpu" --limit 64 --epochs 1 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "train.amp (bf16 O2) runs on a GPU" || fail "amp on the CPU: exit $rc, message: $out"
sed 's/out_features: 10}/out_features: 10, input: fc9}/' "$YAML" > "$WORK/bad_input.yaml"
out=$("$PD_TRAIN" "$WORK/bad_input.yaml" --check 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "reads 'fc9'" || fail "missing input: exit $rc, message: $out"
sed 's/shape: \[1, 28, 28\]/shape: [1, 28, 27]/' "$YAML" > "$WORK/bad_shape.yaml"
out=$("$PD_TRAIN" "$WORK/bad_shape.yaml" --out "$WORK/bs" --quiet 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "784 values" || fail "data/input shape mismatch: exit $rc, message: $out"

# 5. Broken data: a truncated IDX file is refused, naming the file.
head -c 5000 /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz > "$WORK/cut.gz"
sed "s|/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz|$WORK/cut.gz|" "$YAML" > "$WORK/bad_data.yaml"
out=$("$PD_TRAIN" "$WORK/bad_data.yaml" --out "$WORK/bd" --quiet 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "cut.gz" || fail "truncated data: exit $rc, message: $out"

# 6. --check prints the layer table.
"$PD_TRAIN" "$YAML" --check | grep -q "fc1 .*linear .*\[N, 32\] .*25120" || fail "--check table"

# 7. The run directory: never replaced unasked, locked while in use, nothing left by a failed start.
cp "$WORK/full/model.pdparams" "$WORK/full_model.bak"
out=$("$PD_TRAIN" "$YAML" --out "$WORK/full" --limit 1024 --threads 1 --quiet 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "already holds a run" || fail "training into a finished run: exit $rc, message: $out"
cmp -s "$WORK/full/model.pdparams" "$WORK/full_model.bak" || fail "a refused start changed the finished run's model"
out=$("$PD_TRAIN" "$YAML" --out "$WORK/full" --limit 1024 --threads 1 --resume 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "nothing to do" || fail "resuming a finished run: exit $rc, message: $out"
cmp -s "$WORK/full/model.pdparams" "$WORK/full_model.bak" || fail "resuming a finished run rewrote its model"
out=$("$PD_TRAIN" "$YAML" --out "$WORK/full" --limit 1000 --threads 1 --resume --epochs 4 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "samples per epoch" || fail "resume with another --limit: exit $rc, message: $out"
"$PD_TRAIN" "$YAML" --out "$WORK/full" --limit 1024 --threads 1 --quiet --overwrite --epochs 1 || fail "--overwrite exited with $?"
[ "$(wc -l < "$WORK/full/metrics.jsonl")" -eq 1 ] || fail "--overwrite should start a fresh metrics.jsonl"
(cd "$WORK" && "$PD_TRAIN" "$YAML" --limit 256 --epochs 1 --threads 1 --quiet && "$PD_TRAIN" "$YAML" --limit 256 --epochs 1 --threads 1 --quiet) ||
  fail "two runs without --out exited with $?"
[ -s "$WORK/runs/tiny_mlp/model.pdparams" ] && [ -s "$WORK/runs/tiny_mlp-2/model.pdparams" ] || fail "the second default run should go to runs/tiny_mlp-2"
"$PD_TRAIN" "$YAML" --out "$WORK/locked" --limit 20000 --epochs 3 --threads 1 --quiet &
pid=$!
for _ in $(seq 1 500); do [ -s "$WORK/locked/config.yaml" ] && break; sleep 0.01; done
out=$("$PD_TRAIN" "$YAML" --out "$WORK/locked" --limit 256 --threads 1 --resume 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "in use by another pd-train (pid $pid)" || fail "a second pd-train on a used --out: exit $rc, message: $out"
kill $pid 2>/dev/null; wait $pid 2>/dev/null
sed "s|/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz|$WORK/missing.gz|" "$YAML" > "$WORK/missing.yaml"
"$PD_TRAIN" "$WORK/missing.yaml" --out "$WORK/failed_start" --quiet 2>/dev/null && fail "missing data file accepted"
[ ! -e "$WORK/failed_start" ] || fail "a failed start left $(ls -A "$WORK/failed_start" | tr '\n' ' ') behind"
# --limit reads the first samples of an IDX file only, but the files' counts are still compared.
sed "s|/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz|/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz|" "$YAML" > "$WORK/mislabelled.yaml"
out=$("$PD_TRAIN" "$WORK/mislabelled.yaml" --out "$WORK/mislabelled" --limit 256 --threads 1 --quiet 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "has 60000 samples but the labels .* have shape \[10000\]" || fail "labels of another count with --limit: exit $rc, message: $out"

# 8. Non-finite numbers stop the run with the step (and, with --check-nan-inf, the op and the layer).
sed 's/lr: 0.05/lr: 1e10/; /clip_grad_norm/d' "$YAML" > "$WORK/diverge.yaml"
out=$("$PD_TRAIN" "$WORK/diverge.yaml" --out "$WORK/diverge" --limit 1024 --threads 1 --quiet 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "step [0-9]* (epoch 1, batch [0-9]*): the training loss is" || fail "diverging run: exit $rc, message: $out"
[ ! -e "$WORK/diverge/model.pdparams" ] || fail "a diverged run wrote a model"
out=$("$PD_TRAIN" "$WORK/diverge.yaml" --out "$WORK/diverge2" --limit 1024 --threads 1 --quiet --check-nan-inf 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "diverge.yaml:[0-9]*:[0-9]*: layer '.*' (.*): step .*op '.*' produced a non-finite value" ||
  fail "--check-nan-inf: exit $rc, message: $out"
printf '0.5,1.0,0\n0.25,nan,1\n' > "$WORK/nan.csv"
cat > "$WORK/csv.yaml" <<YAML
name: csv_nan
inputs: {x: {shape: [2], dtype: f32}, label: {shape: [], dtype: i64}}
network: [{type: linear, out_features: 2}]
data:
  train: {format: csv, features: $WORK/nan.csv}
  test: {format: csv, features: $WORK/nan.csv}
YAML
out=$("$PD_TRAIN" "$WORK/csv.yaml" --out "$WORK/csv" --quiet 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "nan.csv:2:6: 'nan' is not a finite" || fail "NaN in a CSV: exit $rc, message: $out"

# 9. --init-from that matches nothing is refused.
sed 's/fc1/hidden/; s/name: logits/name: head/; s/input: logits/input: head/; s/^name: tiny_mlp/name: other/' "$YAML" > "$WORK/other.yaml"
"$PD_TRAIN" "$WORK/other.yaml" --out "$WORK/other" --limit 256 --epochs 1 --threads 1 --quiet || fail "training other.yaml exited with $?"
out=$("$PD_TRAIN" "$YAML" --out "$WORK/ft" --limit 256 --epochs 1 --init-from "$WORK/other/model.pdparams" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "none of its 4 parameters matches" || fail "--init-from with no match: exit $rc, message: $out"

# 10. Values out of range, names that are paths, duplicate keys, a label that is not a class index.
expect_check_error() {  # SED_EXPR WANT_IN_MESSAGE
  sed "$1" "$YAML" > "$WORK/range.yaml"
  out=$("$PD_TRAIN" "$WORK/range.yaml" --check 2>&1); rc=$?
  [ $rc -eq 2 ] && echo "$out" | grep -q "range.yaml:[0-9]*:[0-9]*: .*$2" || fail "'$1': exit $rc, message: $out"
}
expect_check_error 's/clip_grad_norm: 5.0/clip_grad_norm: -1/' "clip_grad_norm.*(0, inf)"
expect_check_error 's/loss: {input: logits,/loss: {label_smoothing: 2.0, input: logits,/' "label_smoothing.*\[0, 1)"
expect_check_error 's/^name: tiny_mlp/name: ..\/..\/x/' "not a usable run name"
expect_check_error 's/  epochs: 3/  epochs: 3\n  threads: 0/' "threads.*\[1, 4096\]"
expect_check_error 's/  seed: 7/  seed: 7\n  epochs: 4/' "'epochs' appears twice"
expect_check_error 's/label: {shape: \[\]/label: {shape: [1]/' "needs shape \[\] and dtype i64"
expect_check_error 's/train_transforms: \[{random_flip: 0.5}\]/train_transforms: [{random_crop: {padding: 100000}}]/' "padding must be in \[0, 28\]"
expect_check_error 's/  epochs: 3/  epochs: 99999999999999999999/' "epochs"

# 11. --profile: each epoch's step split into phases that add up, the ops with the most time (the
# network's linear layers and the optimizer among them), and the allocator's cache hits.
out=$("$PD_TRAIN" "$YAML" --out "$WORK/prof" --limit 512 --epochs 2 --threads 1 --profile 2>&1) || fail "--profile exited with $?: $out"
[ "$(echo "$out" | grep -c '^profile of epoch [12]: 16 steps')" -eq 2 ] || fail "--profile: no per-epoch profile header: $out"
for want in "data (waiting for the batch)" "forward + loss" "backward" "optimizer" "other" "linear" "momentum_step" "from the cache"; do
  echo "$out" | grep -q "$want" || fail "--profile output lacks '$want': $out"
done
phase_sum=$(echo "$out" | awk '/^profile of epoch 1/ { on = 1; next }
  on && /^  (data|forward|backward|optimizer|other)/ { sub(/%$/, "", $NF); s += $NF } on && /^  op / { on = 0 } END { print s }')
awk -v s="$phase_sum" 'BEGIN { exit !(s > 99.5 && s < 100.5) }' || fail "--profile phase shares add up to $phase_sum%, not 100%"
# With --check-nan-inf (the one op observer), phases only, and said.
out=$("$PD_TRAIN" "$YAML" --out "$WORK/prof2" --limit 256 --epochs 1 --threads 1 --profile --check-nan-inf 2>&1) || fail "--profile --check-nan-inf exited with $?"
echo "$out" | grep -q "forward + loss" && echo "$out" | grep -q "per-op times not collected" &&
  ! echo "$out" | grep -q "momentum_step" || fail "--profile with --check-nan-inf: $out"

[ $fails -eq 0 ] && echo "pd-train end-to-end: all checks passed"
exit $fails
