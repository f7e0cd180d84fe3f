#!/usr/bin/env bash
# Trains LeNet-5, the MLP, the residual example and the vision transformer on Fashion-MNIST with
# pd-train and with the PyTorch peers using the same recipe, on 2 threads: LeNet and MLP with
# ../shared/peers/torch_fmnist.py (batch 64, Adam lr 2e-3 / 1e-3, cosine decay, inputs normalised to
# mean 0.286 / std 0.353), the residual example with bench/torch_resnet_fmnist.py and the ViT with
# bench/torch_vit_fmnist.py (their recipes; the first 12,800 samples per epoch, to keep the run short;
# `vit` is not among the defaults). The PyTorch that counts is 2.x from pip (../shared/peers/torch2_venv.sh makes the
# venv; TORCH_PY overrides); Debian's python3-torch (1.13 on OpenBLAS) adds a second row where it is
# installed. PaddlePaddle (bench/paddle_fmnist.py, pip paddlepaddle) runs for LeNet and the MLP where
# `$PADDLE_PY -c "import paddle"` works. Prints one markdown row per (arch, framework): samples/s, test
# accuracy, peak RSS, and paddle-cpp's speed over that framework's. With ROUNDS=N, paddle-cpp and the
# PyTorch 2.x peer run N times in alternation (the machine is shared and noisy): their rows show the
# median samples/s, the speedup is the median of the rounds' ratios (a round's two runs share the
# machine's state of those minutes), and a line under them lists each round's.
#   usage: [ROUNDS=N] bench/train_fmnist.sh [EPOCHS] [ARCHS...]      (defaults: 5, lenet mlp resnet)
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${1:-5}
shift || true
ARCHS=${*:-lenet mlp resnet}
ROUNDS=${ROUNDS:-1}
PEER=../shared/peers/torch_fmnist.py
TORCH_PY=${TORCH_PY:-$(bash ../shared/peers/torch2_venv.sh)}
PD_TRAIN=${PD_TRAIN:-build/tools/pd-train}
PADDLE_PY=${PADDLE_PY:-python3}
have_paddle=0
$PADDLE_PY -c "import paddle" >/dev/null 2>&1 && have_paddle=1
have_debian_torch=0
/usr/bin/python3 -c "import torch" >/dev/null 2>&1 && have_debian_torch=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

field() { echo "$1" | sed "s/.*$2=\([^ ]*\).*/\1/"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
# median FORMAT VALUES...
median() {
  local format=$1
  shift
  printf '%s\n' "$@" | sort -g | awk -v f="$format" '{v[NR] = $1} END {printf f, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
# peer_row NAME OUTPUT [SAMPLES_PER_S SPEEDUP]: the markdown row of a peer's output line (samples/s and
# speedup from the arguments when given), with paddle-cpp's speedup over it.
peer_row() {
  local sps acc rss
  sps=${3:-$(field "$2" samples_per_s)} acc=$(field "$2" test_acc) rss=$(field "$2" peak_rss_mb)
  echo "| $arch | $1 | $EPOCHS | $sps | $acc | $rss | ${4:-$(ratio "$pd_sps" "$sps")} |"
}

echo "| model | framework | epochs | samples/s | test acc | peak RSS MiB | paddle-cpp speedup |"
echo "|---|---|---|---|---|---|---|"
for arch in $ARCHS; do
  limit=()
  case $arch in
    lenet) yaml=examples/lenet_fmnist.yaml lr=2e-3 ;;
    mlp) yaml=examples/mlp_fmnist.yaml lr=1e-3 ;;
    resnet) yaml=examples/resnet_fmnist.yaml limit=(--limit 12800) ;;
    vit) yaml=examples/vit_fmnist.yaml limit=(--limit 12800) ;;
    *) echo "unknown arch $arch" >&2; exit 2 ;;
  esac
  if [ "$arch" = resnet ] || [ "$arch" = vit ]; then
    peer_run() { (cd bench && "$1" "torch_${arch}_fmnist.py" --epochs "$EPOCHS" --limit 12800 --threads 2); }
  else
    peer_run() { "$1" "$PEER" --arch "$arch" --epochs "$EPOCHS" --opt adam --lr "$lr" --normalize --cosine --threads 2; }
  fi
  pd_all=() torch_all=() ratios=() rounds=()
  for ((round = 0; round < ROUNDS; round++)); do
    /usr/bin/time -f "%M" -o "$OUT/rss" "$PD_TRAIN" "$yaml" --epochs "$EPOCHS" "${limit[@]}" --threads 2 --out "$OUT/$arch" --overwrite --quiet --json > "$OUT/pd.jsonl"
    pd_all+=("$(awk -F'"samples_per_s": ' '{split($2, a, ","); s += a[1]; n++} END {printf "%.0f", s / n}' "$OUT/pd.jsonl")")
    torch_out=$(peer_run "$TORCH_PY")
    torch_all+=("$(field "$torch_out" samples_per_s)")
    ratios+=("$(ratio "${pd_all[-1]}" "${torch_all[-1]}" | tr -d x)")
    rounds+=("${pd_all[-1]} / ${torch_all[-1]} = ${ratios[-1]}x")
  done
  pd_sps=$(median %.0f "${pd_all[@]}")
  pd_acc=$(tail -1 "$OUT/pd.jsonl" | sed 's/.*"test_acc": \([0-9.]*\).*/\1/')
  pd_rss=$(( $(cat "$OUT/rss") / 1024 ))
  echo "| $arch | paddle-cpp | $EPOCHS | $pd_sps | $pd_acc | $pd_rss | |"
  peer_row "PyTorch $("$TORCH_PY" -c 'import torch; print(torch.__version__)') (pip)" "$torch_out" "$(median %.0f "${torch_all[@]}")" "$(median %.2fx "${ratios[@]}")"
  if [ "$ROUNDS" -gt 1 ]; then
    echo "(rounds, samples/s paddle-cpp / PyTorch: $(IFS=';'; echo "${rounds[*]}" | sed 's/;/; /g'))"
  fi
  if [ $have_debian_torch -eq 1 ] && [ -z "${limit[*]}" ]; then
    peer_row "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') (Debian)" "$(peer_run /usr/bin/python3)"
  fi
  if [ $have_paddle -eq 1 ] && [ -z "${limit[*]}" ]; then
    pp=$($PADDLE_PY bench/paddle_fmnist.py --arch "$arch" --epochs "$EPOCHS" --lr "$lr" --threads 2 2>/dev/null | tail -1)
    peer_row "PaddlePaddle $(field "$pp" paddle) (pip)" "$pp"
  fi
done
