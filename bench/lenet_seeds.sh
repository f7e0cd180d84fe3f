#!/usr/bin/env bash
# Seed-to-seed spread of LeNet-5's test accuracy after the example's 5 epochs, for pd-train and for the
# PyTorch peer with the same recipe (Adam 2e-3, cosine, normalised inputs, batch 64). One seed is one
# draw: a 0.90 target is judged on the mean over seeds, for both frameworks alike.
#   usage: bench/lenet_seeds.sh [SEEDS] [EPOCHS]     (defaults: 5 seeds, 0..4; 5 epochs)
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${1:-5}
EPOCHS=${2:-5}
PEER=${PEER:-../shared/peers/torch_fmnist.py}
PD_TRAIN=${PD_TRAIN:-build/tools/pd-train}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# The peer seeds torch with 0; run it with another seed without editing it.
cat > "$OUT/seeded_peer.py" <<'PY'
import os, runpy, sys, torch
seed, peer = int(os.environ["PEER_SEED"]), sys.argv[1]
manual_seed = torch.manual_seed
torch.manual_seed = lambda _: manual_seed(seed)
sys.argv = [peer] + sys.argv[2:]
runpy.run_path(peer, run_name="__main__")
PY

echo "| seed | paddle-cpp test acc | PyTorch test acc |"
echo "|---|---|---|"
pd_accs=() torch_accs=()
for ((s = 0; s < SEEDS; ++s)); do
  sed "s/^  seed: 0$/  seed: $s/" examples/lenet_fmnist.yaml > "$OUT/lenet.yaml"
  grep -q "^  seed: $s$" "$OUT/lenet.yaml" || { echo "could not set the seed in the example" >&2; exit 1; }
  pd=$("$PD_TRAIN" "$OUT/lenet.yaml" --epochs "$EPOCHS" --threads 2 --out "$OUT/run$s" --quiet --json | tail -1 |
       python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["test_acc"])')
  th=$(PEER_SEED=$s /usr/bin/python3 "$OUT/seeded_peer.py" "$PEER" --arch lenet --epochs "$EPOCHS" --opt adam --lr 2e-3 \
       --normalize --cosine | sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p')
  pd_accs+=("$pd") torch_accs+=("$th")
  echo "| $s | $pd | $th |"
done
python3 - "${pd_accs[*]}" "${torch_accs[*]}" <<'PY'
import statistics as st, sys
pd, th = ([float(v) for v in arg.split()] for arg in sys.argv[1:3])
f = lambda v: f"{st.mean(v):.4f} ± {st.stdev(v) if len(v) > 1 else 0:.4f}"
print(f"| mean ± std | {f(pd)} | {f(th)} |")
PY
