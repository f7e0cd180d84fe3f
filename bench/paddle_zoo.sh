#!/usr/bin/env bash
# pd-convert on real PaddlePaddle models: paddle.vision's classification nets (random weights, 224x224,
# dynamic batch) saved by paddle.jit.save in the installed paddle (3.x: PIR .json; 2.x: ProgramDesc
# .pdmodel), imported, checked against paddle.inference on the same random inputs, and timed: pd-infer on
# the imported model after pd-opt -O2 against paddle.inference (oneDNN enabled, IR optimisations on) on
# the saved model, both with THREADS threads, batch 1 (and 8 for the first two), timed in alternation for
# ROUNDS rounds (median of the per-round p50s: the machine is shared and noisy).
#   usage: bench/paddle_zoo.sh [THREADS] [ROUNDS]   (PADDLE_PY: a python with paddlepaddle, e.g. a venv made by
#          python3 -m venv ~/.cache/pd-peers/paddle3 && ~/.cache/pd-peers/paddle3/bin/pip install "paddlepaddle==3.*")
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
ROUNDS=${2:-3}
PADDLE_PY=${PADDLE_PY:-$HOME/.cache/pd-peers/paddle3/bin/python}
MODELS=${MODELS:-"resnet18 mobilenet_v2 mobilenet_v3_small shufflenet_v2_x0_5 squeezenet1_1 densenet121 vgg11 googlenet"}
PD_CONVERT=${PD_CONVERT:-build/tools/pd-convert}
PD_OPT=${PD_OPT:-build/tools/pd-opt}
PD_INFER=${PD_INFER:-build/tools/pd-infer}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

"$PADDLE_PY" - "$OUT" $MODELS <<'PY' > "$OUT/saved.txt" 2>/dev/null
import os, sys, paddle
from paddle.vision import models
out = sys.argv[1]
paddle.seed(0)
ext = ".json" if int(paddle.__version__.split(".")[0]) >= 3 else ".pdmodel"
for name in sys.argv[2:]:
    m = getattr(models, name)(pretrained=False)
    m.eval()
    paddle.jit.save(m, os.path.join(out, name), input_spec=[paddle.static.InputSpec([None, 3, 224, 224], "float32", "image")])
    print(name + ext)
print("paddle", paddle.__version__)
PY
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); threads $THREADS; $(tail -1 "$OUT/saved.txt")"

paddle_p50() {  # paddle_p50 MODEL BATCH: p50 ms of paddle.inference on the saved model
  "$PADDLE_PY" - "$1" "$OUT/${1%.*}.pdiparams" "$2" "$THREADS" <<'PY' 2>/dev/null
import sys, time, statistics, numpy as np, paddle.inference as pi
model, params, batch, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = pi.Config(model, params)
c.disable_gpu()
c.enable_mkldnn()
c.set_cpu_math_library_num_threads(threads)
c.disable_glog_info()
p = pi.create_predictor(c)
x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224), dtype=np.float32)
h = p.get_input_handle(p.get_input_names()[0])
def run():
    h.copy_from_cpu(x); p.run(); p.get_output_handle(p.get_output_names()[0]).copy_to_cpu()
for _ in range(5): run()
ms = []
for _ in range(20):
    t = time.perf_counter(); run(); ms.append((time.perf_counter() - t) * 1e3)
print("%.4f" % statistics.median(ms))
PY
}
source bench/common.sh  # field, median

echo "| model | import s | max abs vs paddle | batch | pd-infer -O2 p50 ms | paddle.inference p50 ms | pd / paddle |"
echo "|---|---|---|---|---|---|---|"
n=0
for file in $(head -n -1 "$OUT/saved.txt"); do
  name=${file%.*}
  report=$("$PD_CONVERT" "$OUT/$file" "$OUT/$name.ours.pdmodel" --report --verify --batch 2 --python "$PADDLE_PY")
  secs=$(sed -n 's/^converted in \([0-9.]*\) s/\1/p' <<< "$report")
  err=$(sed -n 's/.*max abs \([^,]*\),.*/\1/p' <<< "$report" | head -1)
  "$PD_OPT" "$OUT/$name.ours.pdmodel" "$OUT/$name.O2.pdmodel" -O2 > /dev/null
  batches="1"; [ $n -lt 2 ] && batches="1 8"
  for batch in $batches; do
    pd="" pp=""
    for ((r = 0; r < ROUNDS; ++r)); do
      pd+=" $("$PD_INFER" "$OUT/$name.O2.pdmodel" -b "$batch" --threads "$THREADS" --warmup 5 --repeat 20 --json | field 'd["latency_ms"]["p50"]')"
      pp+=" $(paddle_p50 "$OUT/$file" "$batch")"
    done
    a=$(median $pd) b=$(median $pp)
    echo "| $name | $secs | $err | $batch | $a | $b | $(python3 -c "print('%.2f' % ($a / $b))") |"
  done
  n=$((n + 1))
done
