#!/usr/bin/env bash
# End-to-end checks of pd-bench with tiny budgets (no timing is asserted): a memory-bound row in GB/s,
# check mode against the reference kernels, usage errors with exit 2, JSON that parses, and a
# baseline comparison that flags an artificially faster baseline with exit 3.
source "$(dirname "$0")/common.sh"
PD_BENCH=$1
export XDG_CACHE_HOME=$WORK/cache   # the peak probe runs once here and is cached for the later calls
FAST="--budget-ms 5 --min-reps 2 --warmup 1 --threads 1"

# 1. A memory-bound op reports GB/s.
out=$("$PD_BENCH" add --shape s64x1024 $FAST 2>&1); rc=$?
[ $rc -eq 0 ] || fail "add: exit $rc: $out"
echo "$out" | grep -E '^add +onednn|^add +reference' | grep -q 'GB/s' || fail "add: no GB/s row: $out"
[ -s "$WORK/cache/paddle-cpp/peak.json" ] || fail "the peak probe was not cached"

# 1a. --cold-cache: the caches evicted before each timed rep (a row still comes out; the times are not checked).
out=$("$PD_BENCH" add --shape s64x1024 $FAST --direction fwd --cold-cache 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -qE '^add +(onednn|reference) +f32 +fwd' || fail "add --cold-cache: exit $rc: $out"

# 1b. The backward of an op with inputs it updates in place (batch_norm's running statistics, no gradient).
out=$("$PD_BENCH" batch_norm $FAST 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -qE '^batch_norm +reference +f32 +bwd' || fail "batch_norm fwd + bwd: exit $rc: $out"

# 2. Check mode: every backend against the reference kernel.
if [ "${PD_TEST_ONEDNN:-1}" = 0 ]; then  # a build without oneDNN: nothing to check against the reference
  out=$("$PD_BENCH" matmul --shape m64n48k96 --mode check 2>&1); rc=$?
  [ $rc -eq 0 ] && echo "$out" | grep -q '^nothing checked: .*backends: reference)' || fail "check without oneDNN: exit $rc: $out"
else
  out=$("$PD_BENCH" matmul --shape m64n48k96 --mode check 2>&1); rc=$?
  [ $rc -eq 0 ] && echo "$out" | grep -q '^2 passed, 0 failed' || fail "check matmul: exit $rc: $out"
  out=$("$PD_BENCH" conv2d --shape mb2ic8ih10oc4kh3ph1 --mode check 2>&1); rc=$?
  [ $rc -eq 0 ] && echo "$out" | grep -q '^PASSED conv2d mb2ic8ih10oc4kh3ph1 onednn f32 fwd' || fail "check conv2d: exit $rc: $out"
  printf '# ops with oneDNN kernels\nrelu --shape s4x33\nsoftmax --input x=8x17\nmax_pool2d --shape mb2ic3ih8kh2sh2\n' > "$WORK/batch.txt"
  out=$("$PD_BENCH" --batch "$WORK/batch.txt" --mode check 2>&1); rc=$?
  [ $rc -eq 0 ] && echo "$out" | grep -q '^[1-9][0-9]* passed, 0 failed' || fail "check batch: exit $rc: $out"
fi

# 3. Usage errors: exit 2 and a message.
out=$("$PD_BENCH" conv2d --shape mb2ic8xx3 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "pd-bench: error: .*unknown key 'xx'" || fail "bad shape: exit $rc: $out"
out=$("$PD_BENCH" conv2d --shape mb2ic8ih10oc4 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "lacks 'kh'" || fail "incomplete shape: exit $rc: $out"
out=$("$PD_BENCH" matmull 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "did you mean: matmul" || fail "unknown op: exit $rc: $out"
out=$("$PD_BENCH" add --backend cuda 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -qE "no CUDA backend|no usable CUDA GPU" || fail "cuda: exit $rc: $out"
out=$("$PD_BENCH" add --threads 0 2>&1); rc=$?
[ $rc -eq 2 ] || fail "--threads 0: exit $rc: $out"

# 4. JSON parses; a baseline 10x faster than now is a regression (exit 3, listed).
"$PD_BENCH" matmul --shape m64n64k64 $FAST --direction fwd --format json > "$WORK/run.json" || fail "json run: exit $?"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["results"] and d["machine"]["cpu"]' < "$WORK/run.json" \
  || fail "json does not parse: $(cat "$WORK/run.json")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for r in d["results"]: r["min_ms"] /= 10
print("{\"format\": \"pd-bench\", \"results\": [\n" + ",\n".join(json.dumps(r) for r in d["results"]) + "]}")' "$WORK/run.json" > "$WORK/fast.json"
out=$("$PD_BENCH" matmul --shape m64n64k64 $FAST --direction fwd --baseline "$WORK/fast.json" 2>&1); rc=$?
[ $rc -eq 3 ] && echo "$out" | grep -q "REGRESSION matmul m64n64k64" || fail "baseline: exit $rc: $out"
out=$("$PD_BENCH" matmul --shape m64n64k64 $FAST --direction fwd --baseline "$WORK/run.json" --threshold 100000 2>&1); rc=$?
[ $rc -eq 0 ] || fail "baseline within threshold: exit $rc: $out"

# 5. A baseline from another machine is compared with a warning naming both; one from this machine is not.
grep -q "pd-bench: warning: baseline" <<< "$out" && fail "same-machine baseline warned: $out"
sed 's/"cpu": "[^"]*"/"cpu": "Another CPU 9000"/' "$WORK/run.json" > "$WORK/other.json"
out=$("$PD_BENCH" matmul --shape m64n64k64 $FAST --direction fwd --baseline "$WORK/other.json" --threshold 100000 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "warning: baseline .*other.json was measured on Another CPU 9000 .*; this run is on " <<< "$out" ||
  fail "baseline from another machine: exit $rc: $out"

# 6. No share of the memory peak above 100% without a note: rows that fit in the cache say "cache".
out=$("$PD_BENCH" relu --shape s64x1024 $FAST --direction fwd 2>&1); rc=$?
[ $rc -eq 0 ] || fail "relu: exit $rc: $out"
bad=$(grep -E '^relu ' <<< "$out" | awk '{ p = $(NF-1); if (p != "cache" && p !~ /\*$/ && p + 0 > 100) print }')
[ -z "$bad" ] || fail "a row above 100% of peak without a note: $bad"
if grep -qE '^relu .* cache  ' <<< "$out"; then grep -q "^# cache: the problem's bytes fit in the" <<< "$out" || fail "'cache' unexplained: $out"; fi

# 7. An op without a gradient refuses --direction bwd instead of printing an empty table.
out=$("$PD_BENCH" argmax --direction bwd $FAST 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-bench: error: argmax: the op has no gradient; --direction bwd has nothing to run" <<< "$out" ||
  fail "argmax bwd: exit $rc: $out"

# 8. Ranks above oneDNN's 12 dims fall back to the reference kernel (and agree with it).
r13=2x1x1x1x1x1x1x1x1x1x1x3x4
out=$("$PD_BENCH" add --input x=$r13 --input y=$r13 $FAST 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE '^add +(onednn|reference) .*fwd' <<< "$out" || fail "rank-13 add: exit $rc: $out"
out=$("$PD_BENCH" softmax --input x=$r13 $FAST 2>&1); rc=$?
[ $rc -eq 0 ] || fail "rank-13 softmax: exit $rc: $out"
if [ "${PD_TEST_ONEDNN:-1}" != 0 ]; then
  out=$("$PD_BENCH" mul --input x=$r13 --input y=$r13 --mode check 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -q '^PASSED mul .* onednn f32 fwd' <<< "$out" || fail "rank-13 mul check: exit $rc: $out"
fi

[ $fails -eq 0 ] && echo "pd-bench CLI tests passed"
exit $((fails > 0))
