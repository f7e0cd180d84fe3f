#!/usr/bin/env bash
# Kill anywhere: SIGKILL pd-train at random moments (start-up, a training step, evaluation, a checkpoint
# or metrics write) again and again, resuming each time; the run must end with weights bit-identical to
# an uninterrupted run, per-epoch metrics equal to its, and never a half-written file that a later run
# would read.   usage: pd_train_kill_test.sh PD_TRAIN [KILLS (default $PD_KILLS or 25)]
source "$(dirname "$0")/common.sh"
PD_TRAIN=$1
KILLS=${2:-${PD_KILLS:-25}}
# Checkpoints every 7 steps too, so that kills land in checkpoint writes mid-epoch as well.
sed 's/^  clip_grad_norm: 5.0/  clip_grad_norm: 5.0\n  checkpoint_every: 7/' "$HERE/tiny_mlp.yaml" > "$WORK/kill.yaml"
grep -q checkpoint_every "$WORK/kill.yaml" || fail "could not add checkpoint_every to the test YAML"
ARGS=(--limit 2000 --threads 1 --quiet)

"$PD_TRAIN" "$WORK/kill.yaml" --out "$WORK/ref" "${ARGS[@]}" || fail "the uninterrupted run exited with $?"

# Every file a later run reads must be whole: metrics.jsonl as JSON lines of consecutive epochs, the
# config as written; the checkpoint is verified by the next resume, which refuses a damaged one.
check_files() {
  local dir=$1
  if [ -e "$dir/metrics.jsonl" ]; then
    python3 - "$dir/metrics.jsonl" <<'PY' || fail "kill $2: metrics.jsonl is damaged"
import json, sys
epochs = [json.loads(line)["epoch"] for line in open(sys.argv[1])]
assert epochs == list(range(1, len(epochs) + 1)), epochs
PY
  fi
  if [ -e "$dir/config.yaml" ]; then cmp -s "$dir/config.yaml" "$WORK/kill.yaml" || fail "kill $2: config.yaml is damaged"; fi
}

# Rounds: each trains one run to its end through as many kills as land on it; rounds go on until
# KILLS kills have landed. Every finished round is compared with the uninterrupted run.
finish_round() {  # DIR
  "$PD_TRAIN" "$WORK/kill.yaml" --out "$1" "${ARGS[@]}" --resume || fail "$1: the final resume exited with $?"
  cmp -s "$WORK/ref/model.pdparams" "$1/model.pdparams" || fail "$1: after kills the weights differ from the uninterrupted run"
  cmp -s "$WORK/ref/model.pdiparams" "$1/model.pdiparams" || fail "$1: after kills model.pdiparams differs"
  python3 - "$WORK/ref/metrics.jsonl" "$1/metrics.jsonl" <<'PY' || fail "$1: after kills the per-epoch metrics differ"
import json, sys
keys = ("epoch", "train_loss", "test_loss", "test_acc", "lr", "steps")  # not the timings
a, b = ([{k: json.loads(l)[k] for k in keys} for l in open(p)] for p in sys.argv[1:])
assert a == b, (a, b)
PY
  leftover=$(find "$1" -name '*.tmp.*' -o -name '*.old.*')
  [ -z "$leftover" ] || fail "$1: temporary files left in the run directory: $leftover"
}
killed=0 round=1 tries=0
while [ $killed -lt "$KILLS" ] && [ $tries -lt $((KILLS * 3)) ]; do
  tries=$((tries + 1))
  dir=$WORK/k$round
  flags=()
  [ -d "$dir" ] && flags=(--resume)
  "$PD_TRAIN" "$WORK/kill.yaml" --out "$dir" "${ARGS[@]}" "${flags[@]}" &
  pid=$!
  ms=$((RANDOM % 1300))  # a whole run takes about 1.3 s here: start-up, 3 epochs, evaluation, writes
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  if kill -9 $pid 2>/dev/null; then killed=$((killed + 1)); fi
  wait $pid 2>/dev/null
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 137 ] || fail "run $tries exited with $rc (not killed, not finished)"
  check_files "$dir" "$tries"
  if [ $rc -eq 0 ] && [ -e "$dir/model.pdparams" ]; then finish_round "$dir"; round=$((round + 1)); fi
done
[ -d "$WORK/k$round" ] && finish_round "$WORK/k$round"
echo "kill-anywhere: $killed SIGKILLs; $tries starts; $round runs resumed to their end and compared"
[ $fails -eq 0 ] && echo "pd-train kill-anywhere: all checks passed"
exit $fails
