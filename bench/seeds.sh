#!/usr/bin/env bash
# Seed-to-seed spread of an example's test accuracy, for pd-train and for its PyTorch peer with the same
# recipe: LeNet-5 (the example's 5 epochs; Adam 2e-3, cosine, normalised inputs, batch 64, against
# ../shared/peers/torch_fmnist.py) or the residual example (2 epochs on --limit 12800, as
# bench/train_fmnist.sh runs it, against bench/torch_resnet_fmnist.py). One seed is one draw: an accuracy
# target, or a gap between two frameworks, is judged on the means over seeds, for both alike.
#   usage: [TORCH_PY=PYTHON] bench/seeds.sh [lenet|resnet] [SEEDS] [EPOCHS]
#   (defaults: lenet, 5 seeds 0..4, the example's epochs; PYTHON: PyTorch 2.x from ../shared/peers/torch2_venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ARCH=${1:-lenet}
SEEDS=${2:-5}
PEER=${PEER:-../shared/peers/torch_fmnist.py}
PD_TRAIN=${PD_TRAIN:-build/tools/pd-train}
TORCH_PY=${TORCH_PY:-$(bash ../shared/peers/torch2_venv.sh)}
case $ARCH in
  lenet) EPOCHS=${3:-5} limit=() ;;
  resnet) EPOCHS=${3:-2} limit=(--limit 12800) ;;
  *) echo "seeds.sh: unknown example '$ARCH' (expected lenet or resnet)" >&2; exit 2 ;;
esac
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# The peers seed torch with 0; run them with another seed without editing them.
cat > "$OUT/seeded_peer.py" <<'PY'
import os, runpy, sys, torch
seed, peer = int(os.environ["PEER_SEED"]), sys.argv[1]
manual_seed = torch.manual_seed
torch.manual_seed = lambda _: manual_seed(seed)
sys.argv = [peer] + sys.argv[2:]
sys.path.insert(0, os.path.dirname(os.path.abspath(peer)))
runpy.run_path(peer, run_name="__main__")
PY
peer() {  # SEED: the peer's test accuracy
  if [ "$ARCH" = lenet ]; then
    PEER_SEED=$1 "$TORCH_PY" "$OUT/seeded_peer.py" "$PEER" --arch lenet --epochs "$EPOCHS" --opt adam --lr 2e-3 --normalize --cosine \
      --threads 2 | sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p'
  else
    (cd bench && PEER_SEED=$1 "$TORCH_PY" "$OUT/seeded_peer.py" torch_resnet_fmnist.py --epochs "$EPOCHS" --limit 12800 --threads 2) |
      sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p' | tail -1
  fi
}

echo "| seed | paddle-cpp test acc | PyTorch $("$TORCH_PY" -c 'import torch; print(torch.__version__)') test acc |"
echo "|---|---|---|"
pd_accs=() torch_accs=()
for ((s = 0; s < SEEDS; ++s)); do
  sed "s/^  seed: 0$/  seed: $s/" "examples/${ARCH}_fmnist.yaml" > "$OUT/model.yaml"
  grep -q "^  seed: $s$" "$OUT/model.yaml" || { echo "could not set the seed in the example" >&2; exit 1; }
  pd=$("$PD_TRAIN" "$OUT/model.yaml" --epochs "$EPOCHS" "${limit[@]}" --threads 2 --out "$OUT/run$s" --quiet --json | tail -1 |
       python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["test_acc"])')
  th=$(peer "$s")
  pd_accs+=("$pd") torch_accs+=("$th")
  echo "| $s | $pd | $th |"
done
python3 - "${pd_accs[*]}" "${torch_accs[*]}" <<'PY'
import statistics as st, sys
pd, th = ([float(v) for v in arg.split()] for arg in sys.argv[1:3])
f = lambda v: f"{st.mean(v):.4f} ± {st.stdev(v) if len(v) > 1 else 0:.4f}"
print(f"| mean ± std | {f(pd)} | {f(th)} |")
PY
