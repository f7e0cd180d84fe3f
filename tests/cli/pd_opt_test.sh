#!/usr/bin/env bash
# End-to-end checks of pd-opt on models pd-train wrote: -O2 shrinks an MLP and a conv+bn net with
# portable passes (bn folded) and --target lowers them (activations and pooling fused) with --verify
# passing; levels, --passes, --disable, --print-after-all and --report behave; bad pass names, bad
# targets, bad files and missing arguments exit 2; a zero tolerance against a folded model exits 1
# naming the output; pd-infer runs a lowered model where its target fits and refuses it elsewhere.
source "$(dirname "$0")/common.sh"
PD_TRAIN=$1
PD_OPT=$2
PD_INFER=$3
count() { grep -c "= $1(" <<< "$2"; }

"$PD_TRAIN" "$HERE/tiny_mlp.yaml" --out "$WORK/mlp" --limit 256 --epochs 1 --threads 1 --quiet || fail "training the MLP exited with $?"
MLP=$WORK/mlp/model.pdmodel

# 1. -O2 with --report and --verify: written, smaller, same outputs.
out=$("$PD_OPT" "$MLP" "$WORK/mlp_opt.pdmodel" -O2 --report --verify 2>&1); rc=$?
[ $rc -eq 0 ] || fail "-O2: exit $rc: $out"
for f in mlp_opt.pdmodel mlp_opt.pdiparams; do [ -s "$WORK/$f" ] || fail "-O2 did not write $f"; done
grep -q "^total" <<< "$out" || fail "--report has no total line: $out"
grep -q "outputs match" <<< "$out" || fail "--verify did not report a match: $out"
before=$("$PD_OPT" "$MLP" -O0 --print 2>&1)
after=$("$PD_OPT" "$WORK/mlp_opt.pdmodel" -O0 --print 2>&1) || fail "the optimised model does not load: $after"
[ "$(count linear "$before")" -eq 2 ] || fail "-O0 changed the model: $before"
[ "$(count fused_linear "$after")" -eq 0 ] || fail "-O2 lowered without --target: $after"
grep -q "^program {" <<< "$after" || fail "-O2 output is not portable: $after"
lowered=$("$PD_OPT" "$MLP" "$WORK/mlp_avx2.pdmodel" -O2 --target cpu-avx2 --verify --print 2>&1) || fail "--target cpu-avx2: $lowered"
[ "$(count fused_linear "$lowered")" -eq 1 ] || fail "linear+relu not fused with --target: $lowered"
[ "$(grep -c ' = ' <<< "$lowered")" -lt "$(grep -c ' = ' <<< "$before")" ] || fail "lowering removed no op: $lowered"
grep -q "^program for cpu-avx2 {" <<< "$lowered" || fail "the lowered program is not marked: $lowered"

# 2. --disable and --passes select what runs; --print-after-all dumps after each pass.
out=$("$PD_OPT" "$MLP" -O2 --target host --disable linear_act_fuse --print 2>&1)
[ "$(count fused_linear "$out")" -eq 0 ] || fail "--disable linear_act_fuse still fused: $out"
out=$("$PD_OPT" "$MLP" --passes linear_act_fuse --print 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pass 'linear_act_fuse' lowers for a target and needs --target" <<< "$out" || fail "lowering without --target: $rc $out"
out=$("$PD_OPT" "$MLP" --passes identity_elim,dce --print-after-all 2>&1)
grep -q "// after identity_elim" <<< "$out" && grep -q "// after dce" <<< "$out" || fail "--print-after-all: $out"
grep -q "// after cse" <<< "$out" && fail "--passes ran a pass it did not name"

# 3. A conv + batch_norm + relu + pool net: bn folded, conv+relu(+pool) fused, outputs unchanged.
cat > "$WORK/convbn.yaml" <<YAML
name: convbn
inputs:
  image: {shape: [1, 28, 28], dtype: f32}
  label: {shape: [], dtype: i64}
network:
  - {name: conv, type: conv2d, input: image, out_channels: 4, kernel_size: 3, padding: 1, bias: false}
  - {name: bn, type: batch_norm}
  - {type: relu}
  - {type: max_pool2d, kernel_size: 4}
  - {type: flatten}
  - {name: logits, type: linear, out_features: 10}
loss: {input: logits, label: label}
data:
  train:
    features: /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz
  test:
    features: /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
  transforms: [{scale: 0.00392156862745098}]
train: {batch_size: 32, epochs: 1, seed: 3, optimizer: {type: sgd, lr: 0.05}}
YAML
"$PD_TRAIN" "$WORK/convbn.yaml" --out "$WORK/convbn" --limit 256 --threads 1 --quiet || fail "training convbn exited with $?"
CB=$WORK/convbn/model.pdmodel
out=$("$PD_OPT" "$CB" "$WORK/cb_opt.pdmodel" -O2 --verify --print 2>&1); rc=$?
[ $rc -eq 0 ] || fail "convbn -O2: exit $rc: $out"
[ "$(count batch_norm "$out")" -eq 0 ] || fail "batch_norm not folded: $out"
out=$("$PD_OPT" "$CB" "$WORK/cb_avx2.pdmodel" -O2 --target cpu-avx2 --verify --print 2>&1); rc=$?
[ $rc -eq 0 ] || fail "convbn -O2 --target cpu-avx2: exit $rc: $out"
[ "$(count fused_conv2d_maxpool "$out")" -eq 1 ] || fail "conv+relu+max_pool2d not fused: $out"
[ "$(count max_pool2d "$out")" -eq 0 ] || fail "max_pool2d left after conv_pool_fuse: $out"
out=$("$PD_OPT" "$CB" -O2 --target cpu-avx2 --disable conv_pool_fuse --print 2>&1)
[ "$(count fused_conv2d "$out")" -eq 1 ] || fail "conv+relu not fused: $out"
# The portable baseline has no direct kernel: the pool stays apart, and pd-opt says why.
out=$("$PD_OPT" "$CB" -O2 --target cpu --print 2>&1)
[ "$(count fused_conv2d "$out")" -eq 1 ] && [ "$(count max_pool2d "$out")" -eq 1 ] || fail "--target cpu: $out"
grep -q "pd-opt: note: pass 'conv_pool_fuse' skipped: it does not support target cpu-baseline" <<< "$out" || fail "no skip note: $out"

# pd-infer: a portable model is lowered at load; a lowered one runs where its target fits, and a
# machine with a narrower ISA (PD_CPU_ISA=baseline stands for one) refuses it, naming both.
out=$("$PD_INFER" "$WORK/cb_avx2.pdmodel" --repeat 2 2>&1) || fail "pd-infer on the lowered model: $out"
grep -q "lowered by pd-opt for cpu-avx2" <<< "$out" || fail "pd-infer target line: $out"
out=$(PD_CPU_ISA=baseline "$PD_INFER" "$WORK/cb_avx2.pdmodel" --repeat 2 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-infer: error: the model was lowered by pd-opt for cpu-avx2, which this machine (cpu-baseline) cannot run" <<< "$out" \
  || fail "lowered model on a narrower machine: $rc $out"
out=$(PD_CPU_ISA=baseline "$PD_INFER" "$WORK/cb_opt.pdmodel" --repeat 2 2>&1) || fail "portable model on the baseline: $out"
grep -q "cpu-baseline, optimised (-O2) and lowered at load" <<< "$out" || fail "baseline target line: $out"
# A portable model that never saw pd-opt is optimised at load (-O2 by default, as onnxruntime's session
# does): its batch norm is folded into the convolution, and the outputs match the unfolded model's.
"$PD_INFER" "$CB" --batch 2 --repeat 1 --no-lower --output-dir "$WORK/cb_ref" > /dev/null || fail "pd-infer --no-lower on conv+bn"
out=$("$PD_INFER" "$CB" --batch 2 --repeat 2 --profile --compare "$WORK/cb_ref/logits.npy" --rtol 1e-4 --atol 1e-5 2>&1) \
  || fail "pd-infer on the unoptimised conv+bn model: $out"
grep -qE "^  batch_norm +[0-9]" <<< "$out" && fail "batch norm not folded at load: $out"
grep -q "optimised (-O2) and lowered at load" <<< "$out" || fail "target line of -O2 at load: $out"
out=$("$PD_INFER" "$CB" --batch 2 --repeat 2 --profile -O0 2>&1) || fail "pd-infer -O0: $out"
grep -qE "^  batch_norm +[0-9]" <<< "$out" && grep -q "lowered at load (-O0)" <<< "$out" || fail "-O0 kept no batch norm: $out"
out=$("$PD_INFER" "$CB" -O4 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "an optimisation level from 0 to 3" <<< "$out" || fail "pd-infer -O4: $rc $out"
out=$("$PD_OPT" "$CB" -O2 --verify --rtol 0 --atol 0 2>&1); rc=$?
[ $rc -eq 1 ] || fail "zero tolerance after bn folding should exit 1, got $rc: $out"
grep -q "pd-opt: error: output 'logits' differs" <<< "$out" || fail "mismatch message: $out"

# 4. Errors: unknown pass (lists the valid ones), bad level, truncated file, missing arguments.
out=$("$PD_OPT" "$MLP" "$WORK/x.pdmodel" --passes dce,fuse_all 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-opt: error: unknown pass 'fuse_all' (valid passes: .*dce" <<< "$out" || fail "unknown pass: $rc $out"
[ ! -e "$WORK/x.pdmodel" ] || fail "a refused run wrote its output"
out=$("$PD_OPT" "$MLP" "$WORK/x.pdmodel" --target gpu 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-opt: error: unknown target 'gpu'" <<< "$out" || fail "--target gpu: $rc $out"
out=$("$PD_OPT" "$MLP" "$WORK/x.pdmodel" -O7 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-opt: error:" <<< "$out" || fail "-O7: $rc $out"
head -c 100 "$MLP" > "$WORK/trunc.pdmodel"
cp "$WORK/mlp/model.pdiparams" "$WORK/trunc.pdiparams"
out=$("$PD_OPT" "$WORK/trunc.pdmodel" "$WORK/x.pdmodel" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-opt: error:" <<< "$out" || fail "truncated model: $rc $out"
out=$("$PD_OPT" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "pd-opt: error:" <<< "$out" || fail "no arguments: $rc $out"
out=$("$PD_OPT" --list-passes 2>&1) && grep -q "^-O2:" <<< "$out" || fail "--list-passes: $out"

# 6. No command replaces what the user had. OUT equal to the input (by name, by link, or a NAME whose
# params are the input's) is refused and the input stays as it was.
cp "$MLP" "$WORK/keep.pdmodel"; cp "$WORK/mlp/model.pdiparams" "$WORK/keep.pdiparams"
ln -s "$WORK/keep.pdmodel" "$WORK/link.pdmodel"
for o in "$WORK/keep.pdmodel" "$WORK/./keep.pdmodel" "$WORK/link.pdmodel"; do
  out=$("$PD_OPT" "$WORK/keep.pdmodel" "$o" -O2 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "would replace the input model" <<< "$out" || fail "OUT = IN ($o): exit $rc: $out"
done
out=$("$PD_OPT" "$WORK/keep.pdmodel" "$WORK/keep" -O2 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "extension is '(none)'" <<< "$out" || fail "OUT without .pdmodel: exit $rc: $out"
cmp -s "$MLP" "$WORK/keep.pdmodel" && cmp -s "$WORK/mlp/model.pdiparams" "$WORK/keep.pdiparams" || fail "a refused OUT changed the input"
# A .pdmodel that cannot be written (a directory of that name; a missing directory) writes no .pdiparams.
mkdir -p "$WORK/dir.pdmodel" "$WORK/empty"
out=$("$PD_OPT" "$MLP" "$WORK/dir.pdmodel" -O2 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "is a directory" <<< "$out" || fail "OUT a directory: exit $rc: $out"
[ -e "$WORK/dir.pdiparams" ] && fail "OUT a directory: a .pdiparams was written"
out=$("$PD_OPT" "$MLP" "$WORK/empty/no/such.pdmodel" -O2 2>&1); rc=$?
[ $rc -ne 0 ] && [ -z "$(ls -A "$WORK/empty")" ] || fail "OUT in a missing directory: exit $rc, left $(ls -A "$WORK/empty"): $out"

# 7. Killed at every step of writing OUT over a good pair (PD_CRASH_AT, pd/io/file_pair.h): OUT loads
# each time, as the old model before the params are in place and as the new one from then on.
"$PD_OPT" "$CB" "$WORK/good.pdmodel" -O0 || fail "writing the good pair: exit $?"
old=$("$PD_OPT" "$WORK/good.pdmodel" -O0 --print 2>&1)
new=$("$PD_OPT" "$CB" -O2 --print 2>&1)  # bn folded: new params too
[ "$old" != "$new" ] || fail "-O0 and -O2 print the same program: the kill test cannot tell them apart"
for point in staged:old first-renamed:new done:new; do
  # Written in place, not copied: a model names its params file, so a copy would still read good.pdiparams.
  rm -f "$WORK"/k.*; "$PD_OPT" "$CB" "$WORK/k.pdmodel" -O0 || fail "writing the good pair as k: exit $?"
  PD_CRASH_AT=${point%:*} "$PD_OPT" "$CB" "$WORK/k.pdmodel" -O2 >/dev/null 2>&1; rc=$?
  [ $rc -eq 137 ] || fail "PD_CRASH_AT=${point%:*}: exit $rc, want 137 (killed)"
  got=$("$PD_OPT" "$WORK/k.pdmodel" -O0 --print 2>&1) || fail "killed at ${point%:*}: OUT does not load: $got"
  want=$old; [ "${point#*:}" = new ] && want=$new
  [ "$got" = "$want" ] || fail "killed at ${point%:*}: OUT is not the ${point#*:} model: $got"
done

[ $fails -eq 0 ] && echo "pd-opt: all checks passed"
exit $fails
