#!/usr/bin/env bash
# int8 accuracy over seeds: pd-quant against onnxruntime's quantize_static (bench/ort_quant.py's
# settings, which are pd-quant's defaults) on one example trained with seeds 0..SEEDS-1, each scored on
# the full test set. One trained model is one draw: a gap of a few samples in 10,000 between two
# quantizers is judged on the mean over seeds. onnxruntime's int8 model quantizes its logits (u8), so
# tens of test samples tie for the top class and argmax gives each to the lowest class index; the
# "fair" column scores each tie at its expected value under a fair tie-break instead (pd-quant keeps
# the logits f32: no ties). The last columns score both int8 models against the f32 model's own
# logits (bench/ort_quant.py --pd-int8): top-1 agreement (ties fair) and the logits' SQNR in dB, the
# quantization error without the labels' noise.
#   usage: ORT_PY=PYTHON bench/quant_seeds.sh [lenet|resnet] [SEEDS] [EPOCHS]
#   (defaults: resnet, 5 seeds, 2 epochs; the residual example on --limit 12800 as bench/train_fmnist.sh;
#   PYTHON with numpy, onnx, onnxruntime, e.g. the venv of ../shared/peers/torch2_venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ARCH=${1:-resnet}
SEEDS=${2:-5}
EPOCHS=${3:-2}
: "${ORT_PY:?set ORT_PY to a python with numpy, onnx and onnxruntime}"
PD_TRAIN=${PD_TRAIN:-build/tools/pd-train}
PD_QUANT=${PD_QUANT:-build/tools/pd-quant}
case $ARCH in
  lenet) limit=() ;;
  resnet) limit=(--limit 12800) ;;
  *) echo "quant_seeds.sh: unknown example '$ARCH' (expected lenet or resnet)" >&2; exit 2 ;;
esac
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "| seed | f32 | pd-quant int8 | onnxruntime int8 (argmax) | ties | onnxruntime int8 (fair) | agreement with f32, pd / ort | SQNR dB, pd / ort |"
echo "|---|---|---|---|---|---|---|---|"
rows=()
for ((s = 0; s < SEEDS; ++s)); do
  sed "s/^  seed: 0$/  seed: $s/" "examples/${ARCH}_fmnist.yaml" > "$OUT/model.yaml"
  grep -q "^  seed: $s$" "$OUT/model.yaml" || { echo "could not set the seed in the example" >&2; exit 1; }
  "$PD_TRAIN" "$OUT/model.yaml" --epochs "$EPOCHS" "${limit[@]}" --threads 2 --out "$OUT/run$s" --quiet > /dev/null
  # pd-quant's own --eval: f32 and the quantized model (lowered to int8 kernels) on the whole test set.
  line=$("$PD_QUANT" "$OUT/run$s/model.pdmodel" "$OUT/q$s.pdmodel" --calib "$OUT/run$s/config.yaml" --eval "$OUT/run$s/config.yaml" \
         --threads 2 --no-cache | grep '^accuracy')
  read -r f32 pd <<< "$(sed -n 's/^accuracy   f32 \([0-9.]*\), quantized \([0-9.]*\).*/\1 \2/p' <<< "$line")"
  read -r _ _ _ _ _ ort ties fair _ ort_agree ort_sqnr pd_agree pd_sqnr _ <<< \
    "$("$ORT_PY" bench/ort_quant.py "$OUT/run$s" 2 --accuracy-only --pd-int8 "$OUT/q$s.pdmodel" 2> /dev/null | tail -1)"
  [ -n "$fair" ] && [ -n "$pd" ] && [ -n "$pd_sqnr" ] || { echo "quant_seeds.sh: seed $s: no accuracy from pd-quant or onnxruntime" >&2; exit 1; }
  rows+=("$f32 $pd $ort $fair $pd_agree $ort_agree $pd_sqnr $ort_sqnr")
  echo "| $s | $f32 | $pd | $ort | $ties | $fair | $pd_agree / $ort_agree | $pd_sqnr / $ort_sqnr |"
done
python3 - "${rows[@]}" <<'PY'
import statistics as st, sys
cols = list(zip(*[[float(v) for v in r.split()] for r in sys.argv[1:]]))
f = lambda v: f"{st.mean(v):.5f}"
d = [p - o for p, o in zip(cols[1], cols[3])]
print(f"| mean | {f(cols[0])} | {f(cols[1])} | {f(cols[2])} | | {f(cols[3])} | {f(cols[4])} / {f(cols[5])} "
      f"| {st.mean(cols[6]):.2f} / {st.mean(cols[7]):.2f} |")
print(f"\npd-quant - onnxruntime (fair), in test samples of 10,000: mean {st.mean(d) * 1e4:+.1f}, per seed "
      + ", ".join(f"{v * 1e4:+.0f}" for v in d))
closer = sum(p > o for p, o in zip(cols[6], cols[7]))
print(f"pd-quant's logits closer to f32 (SQNR) on {closer} of {len(d)} seeds, agreeing more often on "
      f"{sum(p > o for p, o in zip(cols[4], cols[5]))}")
PY
