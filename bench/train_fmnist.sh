#!/usr/bin/env bash
# Trains LeNet-5 and the MLP on Fashion-MNIST with pd-train and with the PyTorch peer
# (../shared/peers/torch_fmnist.py, Debian python3-torch + libopenblas0-pthread) using the same recipe:
# batch 64, Adam (lr 2e-3 LeNet, 1e-3 MLP), cosine decay, inputs normalised to mean 0.286 / std 0.353,
# 2 threads. Also runs PaddlePaddle (bench/paddle_fmnist.py, pip package paddlepaddle) where
# `$PADDLE_PY -c "import paddle"` works. Prints one markdown row per (arch, framework): samples/s,
# test accuracy, peak RSS, and paddle-cpp's speed over that framework's.
#   usage: bench/train_fmnist.sh [EPOCHS] [ARCHS...]      (defaults: 5, lenet mlp)
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${1:-5}
shift || true
ARCHS=${*:-lenet mlp}
PEER=${PEER:-../shared/peers/torch_fmnist.py}
PD_TRAIN=${PD_TRAIN:-build/tools/pd-train}
PADDLE_PY=${PADDLE_PY:-python3}
have_paddle=0
$PADDLE_PY -c "import paddle" >/dev/null 2>&1 && have_paddle=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "| model | framework | epochs | samples/s | test acc | peak RSS MiB | paddle-cpp speedup |"
echo "|---|---|---|---|---|---|---|"
for arch in $ARCHS; do
  case $arch in
    lenet) yaml=examples/lenet_fmnist.yaml lr=2e-3 ;;
    mlp) yaml=examples/mlp_fmnist.yaml lr=1e-3 ;;
    *) echo "unknown arch $arch" >&2; exit 2 ;;
  esac
  /usr/bin/time -f "%M" -o "$OUT/rss" "$PD_TRAIN" "$yaml" --epochs "$EPOCHS" --threads 2 --out "$OUT/$arch" --quiet --json > "$OUT/pd.jsonl"
  pd_sps=$(awk -F'"samples_per_s": ' '{split($2, a, ","); s += a[1]; n++} END {printf "%.0f", s / n}' "$OUT/pd.jsonl")
  pd_acc=$(tail -1 "$OUT/pd.jsonl" | sed 's/.*"test_acc": \([0-9.]*\).*/\1/')
  pd_rss=$(( $(cat "$OUT/rss") / 1024 ))
  peer=$(/usr/bin/python3 "$PEER" --arch "$arch" --epochs "$EPOCHS" --opt adam --lr "$lr" --normalize --cosine --threads 2)
  t_sps=$(echo "$peer" | sed 's/.*samples_per_s=\([0-9.]*\).*/\1/')
  t_acc=$(echo "$peer" | sed 's/.*test_acc=\([0-9.]*\).*/\1/')
  t_rss=$(echo "$peer" | sed 's/.*peak_rss_mb=\([0-9.]*\).*/\1/')
  ratio=$(awk -v a="$pd_sps" -v b="$t_sps" 'BEGIN { printf "%.2fx", a / b }')
  echo "| $arch | paddle-cpp | $EPOCHS | $pd_sps | $pd_acc | $pd_rss | |"
  echo "| $arch | PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') | $EPOCHS | $t_sps | $t_acc | $t_rss | $ratio |"
  if [ $have_paddle -eq 1 ]; then
    pp=$($PADDLE_PY bench/paddle_fmnist.py --arch "$arch" --epochs "$EPOCHS" --lr "$lr" --threads 2 2>/dev/null | tail -1)
    p_sps=$(echo "$pp" | sed 's/.*samples_per_s=\([0-9.]*\).*/\1/')
    p_acc=$(echo "$pp" | sed 's/.*test_acc=\([0-9.]*\).*/\1/')
    p_rss=$(echo "$pp" | sed 's/.*peak_rss_mb=\([0-9.]*\).*/\1/')
    p_ver=$(echo "$pp" | sed 's/.*paddle=\([^ ]*\).*/\1/')
    p_ratio=$(awk -v a="$pd_sps" -v b="$p_sps" 'BEGIN { printf "%.2fx", a / b }')
    echo "| $arch | PaddlePaddle $p_ver | $EPOCHS | $p_sps | $p_acc | $p_rss | $p_ratio |"
  fi
done
