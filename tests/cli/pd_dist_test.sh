#!/usr/bin/env bash
# pd-dist end to end: 2 ranks match 1 rank; a killed or stopped rank brings the whole job down with a
# message naming it; --max-restarts resumes to the uninterrupted result; setup errors are clear; two
# "nodes" meet over the network (network namespaces joined by a veth pair, where they can be made).
#   usage: pd_dist_test.sh PD_DIST PD_TRAIN PARAM_DIFF
source "$(dirname "$0")/common.sh"
PD_DIST=$1 PD_TRAIN=$2 PARAM_DIFF=$3
# Dropout draws per-rank masks, so the 1-vs-2-rank check uses the MLP without it.
grep -v dropout "$HERE/tiny_mlp.yaml" > "$WORK/mlp.yaml"
ARGS=(--limit 4000 --threads 1 --quiet)
cd "$WORK"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
no_ranks_left() { ! pgrep -f "pd-train mlp.yaml --out" > /dev/null; }
metric() { python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])['$2'])" "$1/metrics.jsonl"; }

# 1. The same global batch on 1 and 2 ranks: the same weights (f32 rounding apart) and accuracy.
"$PD_TRAIN" mlp.yaml --out one "${ARGS[@]}" --epochs 2 || fail "1-rank run exited with $?"
"$PD_DIST" --nproc-per-node 2 --log-dir logs1 -- pd-train mlp.yaml --out two "${ARGS[@]}" --epochs 2 > dist1.txt 2>&1 ||
  fail "2-rank run exited with $?: $(cat dist1.txt)"
"$PARAM_DIFF" one/model.pdparams two/model.pdparams 1e-5 || fail "2 ranks ended with other weights than 1 rank"
[ "$(metric one test_acc)" = "$(metric two test_acc)" ] || fail "test_acc $(metric one test_acc) (1 rank) vs $(metric two test_acc) (2 ranks)"
[ -s logs1/rank.1.log ] && [ -s logs1/rank.0.log ] || fail "no per-rank logs in logs1/"
[ ! -e two/checkpoint.pdckpt.tmp ] && [ "$(ls two | grep -c rank)" = 0 ] || fail "rank 1 wrote into the run directory: $(ls two)"

# 1b. sharding: optimizer_state (ZeRO-1) ends with the unsharded weights, bit for bit (Adam: two moments
# per parameter, split over the ranks); its checkpoint holds every shard, so an unsharded run resumes it.
sed 's/type: momentum, lr: 0.05, nesterov: true/type: adam, lr: 0.002/' mlp.yaml > adam.yaml
(cat adam.yaml; echo "  sharding: optimizer_state") > sharded.yaml
"$PD_DIST" --nproc-per-node 2 --log-dir logs1b -- pd-train adam.yaml --out adam "${ARGS[@]}" --epochs 2 > /dev/null 2>&1 ||
  fail "unsharded Adam run exited with $?"
"$PD_DIST" --nproc-per-node 2 --log-dir logs1b -- pd-train sharded.yaml --out sharded --limit 4000 --threads 1 --epochs 2 > dist1b.txt 2>&1 ||
  fail "sharded run exited with $?: $(cat dist1b.txt)"
"$PARAM_DIFF" adam/model.pdparams sharded/model.pdparams 0 || fail "sharding the optimizer state changed the weights"
grep -q "this rank keeps the optimizer state of [0-9]* of [0-9]* parameters" dist1b.txt || fail "no sharding line: $(cat dist1b.txt)"
"$PD_DIST" --nproc-per-node 2 --log-dir logs1b -- pd-train sharded.yaml --out half "${ARGS[@]}" --epochs 2 --stop-after-epoch 1 \
  > /dev/null 2>&1 || fail "sharded run to epoch 1 exited with $?"
"$PD_DIST" --nproc-per-node 2 --log-dir logs1b -- pd-train adam.yaml --out half "${ARGS[@]}" --epochs 2 --resume > /dev/null 2>&1 ||
  fail "resuming a sharded run's checkpoint unsharded exited with $?"
"$PARAM_DIFF" adam/model.pdparams half/model.pdparams 0 || fail "a sharded checkpoint resumed to other weights"

# 1c. sync_batch_norm: 2 ranks normalise over the global batch, so they end with 1 rank's weights (an MLP
# with batch_norm on [N, C]; the [N, C, H, W] case is in dist_test); unsynchronised statistics do not.
# A short last batch (4001 = 125 x 32 + 1) leaves rank 1 an empty share, which still takes part.
sed 's/  - {type: relu}/  - {name: bn, type: batch_norm}\n  - {type: relu}/' mlp.yaml > bn.yaml
(cat bn.yaml; echo "  sync_batch_norm: true") > bn_sync.yaml
"$PD_TRAIN" bn.yaml --out bn1 "${ARGS[@]}" --epochs 2 || fail "1-rank batch_norm run exited with $?"
"$PD_DIST" --nproc-per-node 2 --log-dir logs1c -- pd-train bn_sync.yaml --out bn2 "${ARGS[@]}" --epochs 2 > /dev/null 2>&1 ||
  fail "sync_batch_norm run exited with $?"
"$PARAM_DIFF" bn1/model.pdparams bn2/model.pdparams 1e-5 || fail "sync_batch_norm on 2 ranks ended with other weights than 1 rank"
"$PD_DIST" --nproc-per-node 2 --log-dir logs1c -- pd-train bn.yaml --out bn2u "${ARGS[@]}" --epochs 2 > /dev/null 2>&1 ||
  fail "unsynchronised batch_norm run exited with $?"
"$PARAM_DIFF" bn1/model.pdparams bn2u/model.pdparams 1e-3 > /dev/null && fail "per-rank batch_norm statistics matched 1 rank: the check above proves nothing"
timeout 120 "$PD_DIST" --nproc-per-node 2 --log-dir logs1c -- pd-train bn_sync.yaml --out bn2e --limit 4001 --threads 1 --quiet \
  --epochs 1 > dist1c.txt 2>&1 || fail "sync_batch_norm with an empty share exited with $?: $(tail -5 dist1c.txt)"

# 2. A rank killed mid-epoch stops the job within --timeout + 5 s, named with its signal, the
# collective it was in and its log; nothing is left running.
"$PD_DIST" --nproc-per-node 2 --timeout 10 --log-dir logs2 -- pd-train mlp.yaml --out killed --limit 20000 --threads 1 \
  --epochs 3 > dist2.txt 2>&1 &
launcher=$!
for _ in $(seq 100); do [ -e killed/metrics.jsonl ] && grep -q epoch killed/metrics.jsonl 2>/dev/null && break; sleep 0.1; done
victim=$(pgrep -f "pd-train mlp.yaml --out killed" | while read p; do grep -qz '^RANK=1$' /proc/$p/environ && echo $p; done | head -1)
start=$(date +%s%N)
[ -n "$victim" ] && kill -9 "$victim" || fail "no rank 1 process to kill"
wait $launcher; rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -ne 0 ] || fail "the job exited 0 after a rank was killed"
[ $took -lt 15000 ] || fail "the job took $took ms to stop (--timeout 10)"
grep -q "rank 1 (node 0, local rank 1, pid $victim) was killed by signal 9 (SIGKILL); its last collective was .*#[0-9]" dist2.txt ||
  fail "the report does not name the killed rank, its signal and collective: $(cat dist2.txt)"
grep -q "log: logs2/rank.1.log" dist2.txt || fail "the report does not name the log"
grep -q "^\[rank 0\] .*x 2 ranks" dist2.txt || fail "rank 0's output is not on the terminal with its prefix: $(cat dist2.txt)"
no_ranks_left || fail "ranks left running after the job stopped: $(pgrep -af "pd-train mlp.yaml --out")"

# 3. A rank that stops making progress (SIGSTOP): the others' collective times out, the job stops.
"$PD_DIST" --nproc-per-node 2 --timeout 3 --log-dir logs3 -- pd-train mlp.yaml --out stopped --limit 20000 --threads 1 \
  > dist3.txt 2>&1 &
launcher=$!
sleep 2
victim=$(pgrep -f "pd-train mlp.yaml --out stopped" | while read p; do grep -qz '^RANK=1$' /proc/$p/environ && echo $p; done | head -1)
[ -n "$victim" ] && kill -STOP "$victim" || fail "no rank 1 process to stop"
start=$(date +%s%N)
wait $launcher; rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -ne 0 ] || fail "the job exited 0 with a stopped rank"
[ $took -lt 8000 ] || fail "the job took $took ms to stop after a rank hung (--timeout 3)"
grep -q "failed on rank 0 of 2 after 3.0 s.*stopped making progress" dist3.txt || fail "no timeout message: $(cat dist3.txt)"
no_ranks_left || fail "ranks left running after a hang: $(pgrep -af "pd-train mlp.yaml --out")"

# 4. --max-restarts: a killed rank, a restart from the last checkpoint, the uninterrupted result.
"$PD_DIST" --nproc-per-node 2 --log-dir logs4a -- pd-train mlp.yaml --out whole "${ARGS[@]}" --epochs 3 > /dev/null 2>&1 ||
  fail "the uninterrupted 2-rank run failed"
"$PD_DIST" --nproc-per-node 2 --max-restarts 1 --timeout 10 --log-dir logs4 -- pd-train mlp.yaml --out restarted "${ARGS[@]}" \
  --epochs 3 > dist4.txt 2>&1 &
launcher=$!
for _ in $(seq 200); do grep -q '"epoch": 1' restarted/metrics.jsonl 2>/dev/null && break; sleep 0.05; done
victim=$(pgrep -f "pd-train mlp.yaml --out restarted" | while read p; do grep -qz '^RANK=0$' /proc/$p/environ && echo $p; done | head -1)
[ -n "$victim" ] && kill -9 "$victim" || fail "no rank 0 process to kill"
wait $launcher || fail "the restarted job exited with $?: $(cat dist4.txt)"
grep -q "restarting every rank from the last checkpoint (restart 1 of 1)" dist4.txt || fail "no restart: $(cat dist4.txt)"
"$PARAM_DIFF" whole/model.pdparams restarted/model.pdparams 0 || fail "the restarted run ended with other weights"

# 5. Setup errors name the address and what was awaited, within --timeout.
port=$(free_port)
python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',$port)); s.listen(); time.sleep(5)" &
holder=$!
sleep 0.3
out=$("$PD_DIST" --master 127.0.0.1:$port -- pd-train mlp.yaml 2>&1) && fail "a taken port was accepted"
grep -q "port $port.*Address already in use" <<< "$out" || fail "port in use: $out"
kill $holder
out=$("$PD_DIST" --nnodes 2 --node-rank 1 --master 127.0.0.1:$(free_port) --timeout 1 -- pd-train mlp.yaml 2>&1) &&
  fail "an unreachable master was accepted"
grep -q "cannot reach the rendezvous store at 127.0.0.1:.* within 1 s" <<< "$out" || fail "unreachable master: $out"
out=$("$PD_DIST" --nnodes 2 --node-rank 0 --master 127.0.0.1:$(free_port) --timeout 1 -- pd-train mlp.yaml 2>&1) &&
  fail "a node that never came was not noticed"
grep -q "waiting for node 1 of 2 to join" <<< "$out" || fail "missing node: $out"
out=$("$PD_DIST" --nnodes 2 --node-rank 0 --master "file:$WORK/lonely" --host 127.0.0.1 --timeout 1 -- pd-train mlp.yaml 2>&1) &&
  fail "a node that never came to a file store was not noticed"
grep -q "store file:$WORK/lonely waiting for node 1 of 2 to join" <<< "$out" || fail "missing node (file store): $out"
out=$("$PD_DIST" --nnodes 2 --node-rank 0 --master "file:$WORK/lonely" --host 127.0.0.1 --timeout 1 -- pd-train mlp.yaml 2>&1) &&
  fail "a file store holding a dead job's keys was used"
grep -q "already joined the job at file:$WORK/lonely as --node-rank 0.*remove it" <<< "$out" || fail "stale file store: $out"
port=$(free_port)
"$PD_DIST" --nnodes 2 --node-rank 0 --master 127.0.0.1:$port --nproc-per-node 2 --timeout 5 -- pd-train mlp.yaml > n0.txt 2>&1 &
out=$("$PD_DIST" --nnodes 2 --node-rank 1 --master 127.0.0.1:$port --timeout 5 -- pd-train mlp.yaml 2>&1) && fail "mismatched nodes ran"
wait
grep -q "node 0 joined .* --nproc-per-node 2 .*, but node 1 has .*--nproc-per-node 1" <<< "$out" || fail "mismatch (node 1): $out"
grep -q "node 1 joined .* --nproc-per-node 1 .*, but node 0 has" n0.txt || fail "mismatch (node 0): $(cat n0.txt)"

# 6. Two nodes x 1 rank: over loopback always; across network namespaces joined by a veth pair where
# they can be made. A rank killed on node 1 stops node 0 too; with a restart, the job finishes.
two_nodes() {  # two_nodes TAG MASTER [NS0 NS1]; MASTER is HOST (a TCP store on a free port) or file:DIR --host ADDR
  local tag=$1 master=$2 ns0=${3:-} ns1=${4:-}
  [[ $master == file:* ]] || master="$master:$(free_port)"
  local in0=() in1=()
  [ -n "$ns0" ] && in0=(ip netns exec "$ns0") && in1=(ip netns exec "$ns1")
  "${in0[@]}" "$PD_DIST" --nnodes 2 --node-rank 0 --master $master --timeout 10 --max-restarts 1 --log-dir "logs-$tag" \
    -- pd-train mlp.yaml --out "nodes-$tag" --limit 20000 --threads 1 --epochs 3 --quiet > "node0-$tag.txt" 2>&1 &
  local l0=$!
  "${in1[@]}" "$PD_DIST" --nnodes 2 --node-rank 1 --master $master --timeout 10 --max-restarts 1 --log-dir "logs-$tag" \
    -- pd-train mlp.yaml --out "nodes-$tag" --limit 20000 --threads 1 --epochs 3 --quiet > "node1-$tag.txt" 2>&1 &
  local l1=$!
  for _ in $(seq 200); do grep -q '"epoch": 1' "nodes-$tag/metrics.jsonl" 2>/dev/null && break; sleep 0.05; done
  local victim; victim=$(pgrep -f "pd-train mlp.yaml --out nodes-$tag" | while read p; do grep -qz '^RANK=1$' /proc/$p/environ && echo $p; done | head -1)
  [ -n "$victim" ] && kill -9 "$victim" || fail "$tag: no rank 1 to kill"
  wait $l0 || fail "$tag: node 0 exited with $?: $(cat "node0-$tag.txt")"
  wait $l1 || fail "$tag: node 1 exited with $?: $(cat "node1-$tag.txt")"
  grep -q "rank 1 (node 1, local rank 0, pid $victim) was killed by signal 9" "node0-$tag.txt" ||
    fail "$tag: node 0 does not say that rank 1 on node 1 was killed: $(cat "node0-$tag.txt")"
  grep -q "restarting every rank" "node1-$tag.txt" || fail "$tag: node 1 did not restart: $(cat "node1-$tag.txt")"
  [ -s "nodes-$tag/model.pdparams" ] || fail "$tag: the restarted job wrote no model"
}
two_nodes loopback 127.0.0.1
# The same through a file store (a directory both "nodes" see, as on NFS); it is left empty after the job.
two_nodes filestore "file:$WORK/store --host 127.0.0.1"
[ -d store ] && [ -z "$(ls -A store)" ] || fail "the file store kept keys after the job finished: $(ls -A store)"
if ip netns add pdd0-$$ 2>/dev/null && ip netns add pdd1-$$ 2>/dev/null &&
   ip link add pdv0-$$ type veth peer name pdv1-$$ 2>/dev/null && ip netns exec pdd0-$$ true 2>/dev/null; then
  ip link set pdv0-$$ netns pdd0-$$ && ip link set pdv1-$$ netns pdd1-$$
  ip -n pdd0-$$ addr add 10.251.0.1/24 dev pdv0-$$ && ip -n pdd1-$$ addr add 10.251.0.2/24 dev pdv1-$$
  for n in 0 1; do ip -n pdd$n-$$ link set pdv$n-$$ up; ip -n pdd$n-$$ link set lo up; done
  two_nodes netns 10.251.0.1 pdd0-$$ pdd1-$$
  ip netns del pdd0-$$; ip netns del pdd1-$$
else
  ip netns del pdd0-$$ 2>/dev/null; ip netns del pdd1-$$ 2>/dev/null; ip link del pdv0-$$ 2>/dev/null
  echo "SKIP: network namespaces cannot be made here (needs root or CAP_NET_ADMIN); the loopback two-node run above ran"
fi

[ $fails -eq 0 ] && echo "pd-dist: all checks passed" || exit 1
