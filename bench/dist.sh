#!/usr/bin/env bash
# pd-dist throughput and correctness on this machine: the ResNet example (and the MLP) on 1 rank x 1
# thread and 2 ranks x 1 thread, beside PyTorch DDP (gloo) on the same architecture, global batch and
# samples; memory per rank with sharding stage 1; the 1- and 2-rank MLP weights compared; a killed
# rank timed N times. Medians of REPEAT runs.
#   usage: bench/dist.sh [BUILD_DIR (build)] [REPEAT (3)] [KILLS (20)]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$ROOT/build}" && pwd); REPEAT=${2:-3}; KILLS=${3:-20}
PY=${TORCH_PY:-$HOME/.cache/pd-peers/torch2/bin/python}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; cd "$W"
LIMIT=4096
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
sps() { python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])['samples_per_s'])" "$1/metrics.jsonl"; }
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, ISA $(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2)"

for arch in $([ "$REPEAT" -gt 0 ] && echo resnet mlp); do  # REPEAT 0: only the kill timing
  sed "s/^  epochs: .*/  epochs: 1/" "$ROOT/examples/${arch}_fmnist.yaml" > $arch.yaml
  one=(); two=(); peer1=(); peer2=()
  for r in $(seq "$REPEAT"); do
    "$B/tools/pd-train" $arch.yaml --limit $LIMIT --threads 1 --quiet --out $arch-1-$r
    one+=("$(sps $arch-1-$r)")
    OMP_NUM_THREADS=1 "$B/tools/pd-dist" --nproc-per-node 2 --log-dir logs -- pd-train $arch.yaml --limit $LIMIT --threads 1 \
      --quiet --out $arch-2-$r 2> /dev/null
    two+=("$(sps $arch-2-$r)")
    if [ -x "$PY" ]; then
      peer1+=("$("$PY" "$ROOT/bench/torch_ddp_fmnist.py" --world 1 --arch $arch --limit $LIMIT --batch $(grep -m1 batch_size $arch.yaml | awk '{print $2}') | sed 's/.*samples_per_s=//')")
      peer2+=("$("$PY" "$ROOT/bench/torch_ddp_fmnist.py" --world 2 --arch $arch --limit $LIMIT --batch $(grep -m1 batch_size $arch.yaml | awk '{print $2}') | sed 's/.*samples_per_s=//')")
    fi
  done
  m1=$(printf '%s\n' "${one[@]}" | median); m2=$(printf '%s\n' "${two[@]}" | median)
  echo "$arch: pd-train 1 rank x 1 thread ${m1} samples/s; pd-dist 2 ranks x 1 thread ${m2} samples/s ($(python3 -c "print(f'{$m2/$m1:.2f}')")x)"
  if grep -q batch_norm $arch.yaml; then  # what synchronising the statistics costs
    (cat $arch.yaml; echo "  sync_batch_norm: true") > ${arch}_sync.yaml
    sync=()
    for r in $(seq "$REPEAT"); do
      OMP_NUM_THREADS=1 "$B/tools/pd-dist" --nproc-per-node 2 --log-dir logs -- pd-train ${arch}_sync.yaml --limit $LIMIT \
        --threads 1 --quiet --out $arch-sync-$r 2> /dev/null
      sync+=("$(sps $arch-sync-$r)")
    done
    ms=$(printf '%s\n' "${sync[@]}" | median)
    echo "$arch: pd-dist 2 ranks with sync_batch_norm ${ms} samples/s ($(python3 -c "print(f'{$ms/$m2:.2f}')")x unsynchronised)"
  fi
  if [ ${#peer2[@]} -gt 0 ]; then
    p1=$(printf '%s\n' "${peer1[@]}" | median); p2=$(printf '%s\n' "${peer2[@]}" | median)
    echo "$arch: PyTorch DDP gloo 1 rank ${p1} samples/s; 2 ranks ${p2} samples/s ($(python3 -c "print(f'{$p2/$p1:.2f}')")x); pd-dist / PyTorch at 2 ranks: $(python3 -c "print(f'{$m2/$p2:.2f}')")x"
  fi
done

# Sharding stage 1: an MLP wide enough for Adam's state to count (4.0 M parameters, 32 MiB of moments),
# 2 ranks with and without sharding: each rank's optimizer state and peak RSS (pd-dist's summary line).
if [ "$REPEAT" -gt 0 ]; then
  { sed -n '/^name:/,/^network:/p' "$ROOT/examples/mlp_fmnist.yaml" | sed 's/^name: .*/name: wide_mlp/'
    echo "  - {type: flatten, input: image}"
    for i in 1 2 3 4; do echo "  - {name: fc$i, type: linear, out_features: 1024}"; echo "  - {type: relu}"; done
    echo "  - {name: logits, type: linear, out_features: 10}"
    sed -n '/^loss:/,$p' "$ROOT/examples/mlp_fmnist.yaml" | sed -e 's/^  epochs: .*/  epochs: 1/' -e 's/type: [a-z]*, lr: [0-9.e-]*/type: adam, lr: 0.001/'
  } > wide.yaml
  (cat wide.yaml; echo "  sharding: optimizer_state") > wide_sharded.yaml
  for y in wide wide_sharded; do
    OMP_NUM_THREADS=1 "$B/tools/pd-dist" --nproc-per-node 2 --log-dir logs -- pd-train $y.yaml --limit $LIMIT --threads 1 \
      --out $y > $y.txt 2>&1
    echo "$y: $(grep -o 'peak resident memory: .*' $y.txt); $(grep -o 'keeps the optimizer state .*' $y.txt || echo 'optimizer state not sharded'); $(sps $y) samples/s"
  done
  "$B/tests/param_diff" wide/model.pdparams wide_sharded/model.pdparams 0 > /dev/null && echo "wide: sharded and unsharded weights bit-identical"
fi

grep -v dropout "$ROOT/tests/cli/tiny_mlp.yaml" > tiny.yaml
"$B/tools/pd-train" tiny.yaml --limit 8000 --threads 1 --quiet --out c1 --epochs 1
"$B/tools/pd-dist" --nproc-per-node 2 --log-dir logs -- pd-train tiny.yaml --limit 8000 --threads 1 --quiet --out c2 --epochs 1 2> /dev/null
echo "correctness (1 epoch, 8000 samples, 1 vs 2 ranks): $("$B/tests/param_diff" c1/model.pdparams c2/model.pdparams 1e-5)"

times=()
for k in $(seq "$KILLS"); do
  "$B/tools/pd-dist" --nproc-per-node 2 --timeout 10 --log-dir logs -- pd-train tiny.yaml --limit 20000 --threads 1 --quiet \
    --out kill-$k --epochs 5 > /dev/null 2>&1 &
  l=$!
  sleep "$(python3 -c "import random; print(round(random.uniform(1.0, 3.0), 2))")"
  # A rank (not the launcher, whose command line holds the same words): one with RANK in its environment.
  v=$(pgrep -f "pd-train tiny.yaml --limit 20000 --threads 1 --quiet --out kill-$k" |
      while read p; do grep -qz '^RANK=' /proc/$p/environ 2>/dev/null && echo $p; done | shuf -n1)
  s=$(date +%s%N); kill -9 "$v"; wait $l 2> /dev/null || true
  times+=("$(( ($(date +%s%N) - s) / 1000000 ))")
  pgrep -f "out kill-$k" > /dev/null && echo "ranks left after kill $k!"
done
echo "killed rank -> job down (--timeout 10), $KILLS kills: median $(printf '%s\n' "${times[@]}" | median) ms, max $(printf '%s\n' "${times[@]}" | sort -n | tail -1) ms"
