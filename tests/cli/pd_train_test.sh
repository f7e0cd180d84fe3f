#!/usr/bin/env bash
# End-to-end checks of pd-train on a slice of Fashion-MNIST: the loss drops, the run directory is
# complete, a stopped-and-resumed run ends bit-identical to an uninterrupted one, and broken YAML and
# data files are refused with a clear message and exit code 2.
source "$(dirname "$0")/common.sh"
PD_TRAIN=$1
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

[ $fails -eq 0 ] && echo "pd-train end-to-end: all checks passed"
exit $fails
