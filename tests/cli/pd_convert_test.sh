#!/usr/bin/env bash
# End-to-end checks of pd-convert: the committed torch.onnx fixtures (tests/data/onnx, made by
# make_fixtures.py; opsets 11-21, torch 2.15's default dynamo export among them) import and match
# onnxruntime's saved outputs within 1e-4 with identical argmax, run at other batch sizes, and pd-infer
# runs them; a model pd-train wrote exports to ONNX at opsets 11-17
# and comes back bit-identical; with onnxruntime installed ($PD_PYTHON), --verify also runs it. Bad input
# (truncated or unknown files, unsupported ops listed in full, opset out of range, a short initializer,
# missing external data, undefined values, shapes that do not fit, bad flags) exits 2 and writes nothing.
source "$(dirname "$0")/common.sh"
PD_TRAIN=$1
PD_CONVERT=$2
PD_INFER=$3
PD_OPT=$4
DATA=$HERE/../data/onnx
NO_ORT=(--python /nonexistent/python)  # the saved outputs are the reference, whatever is installed

# 1. Every fixture imports and matches onnxruntime's saved output.
for m in convnet mobile_block dense_fire encoder shuffle_block window_block class_token token_mlp logic_ops upsample_fpn audio_conv1d unet_up dilated_aspp transposed_pads bicubic_up dynamo_net opset18_forms gather_nd; do
  input=input; [ $m = encoder ] && input=ids
  out=$("$PD_CONVERT" "$DATA/$m.onnx" "$WORK/$m.pdmodel" --verify --report "${NO_ORT[@]}" \
        --input "$input=$DATA/$m.input.npy" --reference "output=$DATA/$m.output.npy" 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "$m: exit $rc: $out"
  grep -q "verify vs --reference: output: .*argmax agrees \([0-9]*\)/\1 -> ok" <<< "$out" || fail "$m: no match: $out"
  [ $m = logic_ops ] || [ $m = gather_nd ] && ! grep -q "max abs 0, max rel 0, " <<< "$out" && fail "$m: not bitwise: $out"
  grep -q "^source: ONNX opset" <<< "$out" || fail "$m: --report: $out"
  [ -s "$WORK/$m.pdiparams" ] || fail "$m: no params file written"
done
# The conv net's batch is dynamic through its Shape/Gather/Concat/Reshape subgraph: it runs at batch 7.
out=$("$PD_INFER" "$WORK/convnet.pdmodel" --batch 7 --repeat 1 --output-dir "$WORK/out7" 2>&1) || fail "pd-infer on the imported conv net: $out"
[ "$(od -An -c -N 80 "$WORK/out7/output.npy" | tr -d ' \n' | grep -o "(7,10)")" = "(7,10)" ] || fail "the imported conv net did not give a (7, 10) output: $out"
# So is the shuffle block's, through an integer Div and reshapes around a transpose (ShuffleNet's channel
# shuffle), and its x * sigmoid(x) runs as silu.
out=$("$PD_INFER" "$WORK/shuffle_block.pdmodel" --batch 5 --repeat 1 --output-dir "$WORK/out5" --profile 2>&1) || fail "pd-infer on the shuffle block: $out"
[ "$(od -An -c -N 80 "$WORK/out5/output.npy" | tr -d ' \n' | grep -o "(5,4)")" = "(5,4)" ] || fail "the shuffle block did not give a (5, 4) output: $out"
grep -q "fused_elementwise\|^ *sigmoid " <<< "$out" && fail "the shuffle block's SiLU did not become an activation: $out"
# torch.onnx.export's default (dynamo) export keeps its batch dynamic too: its weights in external data,
# ReduceMean / ReduceMax by axes inputs and Gelu of opsets 18-20 (the checker sees their opset-17 view).
out=$("$PD_INFER" "$WORK/dynamo_net.pdmodel" --batch 5 --repeat 1 --output-dir "$WORK/dyn5" 2>&1) || fail "pd-infer on the dynamo export: $out"
[ "$(od -An -c -N 80 "$WORK/dyn5/output.npy" | tr -d ' \n' | grep -o "(5,141)")" = "(5,141)" ] || fail "the dynamo export did not give a (5, 141) output: $out"
# Swin's shifted windows (the batch folded with the windows and back, a ScatterND mask) and a ViT's class
# token expanded to the batch run at other batches too.
for m in window_block class_token; do
  out=$("$PD_INFER" "$WORK/$m.pdmodel" --batch 3 --repeat 1 --output-dir "$WORK/$m-3" 2>&1) || fail "pd-infer on $m at batch 3: $out"
  [ "$(od -An -c -N 80 "$WORK/$m-3/output.npy" | tr -d ' \n' | grep -o "(3,5)")" = "(3,5)" ] || fail "$m did not give a (3, 5) output: $out"
done
# The FPN's resizing to sizes from Shape keeps its batch dynamic; its 8-channel convolution in channel
# blocks reads its input plain (oneDNN 2.6 has no jit kernel for one partly filled block and ran its
# reference kernel, 6x slower for the model).
out=$(ONEDNN_VERBOSE=1 "$PD_INFER" "$WORK/upsample_fpn.pdmodel" --batch 3 --repeat 1 --output-dir "$WORK/fpn3" 2>&1) || fail "pd-infer on the FPN at batch 3: $out"
[ "$(od -An -c -N 80 "$WORK/fpn3/output.npy" | tr -d ' \n' | grep -o "(3,2368)")" = "(3,2368)" ] || fail "the FPN did not give a (3, 2368) output: $out"
grep -q "onednn_verbose,exec,cpu,convolution,ref" <<< "$out" && fail "a convolution of the FPN ran oneDNN's reference kernel: $out"
# DeepLabV3's dilations on a small map: -O2 cuts the taps that read only padding (a 1x1 convolution), and a
# convolution oneDNN has only its reference kernel for runs on ours; onnxruntime's numbers either way.
out=$("$PD_OPT" "$WORK/dilated_aspp.pdmodel" "$WORK/dilated_o2.pdmodel" -O2 --report 2>&1) || fail "pd-opt on the ASPP: $out"
grep -Eq "^conv_tap_trim +[0-9]+ +[0-9]+ +0 +1 " <<< "$out" || fail "conv_tap_trim did not cut the dilation-8 taps: $out"
out=$(ONEDNN_VERBOSE=1 "$PD_INFER" "$WORK/dilated_aspp.pdmodel" --input "input=$DATA/dilated_aspp.input.npy" \
      --compare "output=$DATA/dilated_aspp.output.npy" --repeat 1 2>&1) || fail "pd-infer on the ASPP: $out"
grep -q "onednn_verbose,exec,cpu,convolution,ref" <<< "$out" && fail "the ASPP ran oneDNN's reference convolution: $out"
# Resize and ConvTranspose export back to ONNX and import again to the same numbers.
for m in upsample_fpn unet_up bicubic_up; do
  out=$("$PD_CONVERT" "$WORK/$m.pdmodel" "$WORK/$m.back.onnx" --verify "${NO_ORT[@]}" 2>&1) || fail "$m to ONNX: $out"
  grep -q "verify vs re-import (round trip, bitwise): output: max abs 0, " <<< "$out" || fail "$m: the round trip differs: $out"
done
# A MatMul by a constant [K, N] matrix (torch folded the weight's transpose) is a linear, so that its
# bias and GELU fuse into the GEMM (ViT-B/16 1.2x faster): no matmul is left.
out=$("$PD_INFER" "$WORK/token_mlp.pdmodel" --batch 3 --repeat 2 --profile 2>&1) || fail "pd-infer on the token MLP: $out"
grep -q "^ *fused_linear " <<< "$out" || fail "the token MLP's GEMMs are not fused linears: $out"
grep -Eq "^ *(matmul|erf|fused_elementwise) " <<< "$out" && fail "the token MLP still runs a matmul or an unfused GELU: $out"
# At batch 1 its small convolutions (the squeeze-excitation's, on 1x1 maps) run on the calling thread,
# not on OpenMP's team.
out=$("$PD_INFER" "$WORK/shuffle_block.pdmodel" --batch 1 --repeat 3 --profile 2>&1) || fail "pd-infer on the shuffle block at batch 1: $out"
grep -q "OpenMP's team ran 0.0 primitives a run$" <<< "$out" || fail "the shuffle block used OpenMP's team at batch 1: $out"
# HF transformers' BERT and GPT-2 (tests/data/onnx/make_fixtures.py hf_text) with their sequence length
# fixed, the second sequence padded: the padding and causal masks (And, LessOrEqual, IsNaN, a bool Gather,
# GatherElements, Gather of rank-2 position ids) import and the logits match onnxruntime's.
for m in hf_bert hf_gpt2; do
  out=$("$PD_CONVERT" "$DATA/$m.onnx" "$WORK/$m.pdmodel" --verify "${NO_ORT[@]}" --input-shape input_ids=2x8 \
        --input-shape attention_mask=2x8 --input "input_ids=$DATA/$m.input_ids.npy" \
        --input "attention_mask=$DATA/$m.attention_mask.npy" --reference "output=$DATA/$m.output.npy" 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -q "verify vs --reference: output: .* -> ok" <<< "$out" || fail "$m: exit $rc: $out"
done
# --input-shape fixes the batch: every shape computation folds.
out=$("$PD_CONVERT" "$DATA/convnet.onnx" "$WORK/convnet_b3.pdmodel" --input-shape input=3x1x32x32 --report 2>&1) || fail "--input-shape: $out"
grep -q "inputs: input: f32\[3, 1, 32, 32\]" <<< "$out" || fail "--input-shape not applied: $out"
# A ? keeps the model's extent: the batch stays dynamic (and runs at 5) where the rest is given.
out=$("$PD_CONVERT" "$DATA/convnet.onnx" "$WORK/convnet_any.pdmodel" --input-shape "input=?x1x32x32" --report 2>&1) || fail "--input-shape ?: $out"
grep -q "inputs: input: f32\[-1, 1, 32, 32\]" <<< "$out" || fail "--input-shape ? did not keep the batch: $out"
out=$("$PD_INFER" "$WORK/convnet_any.pdmodel" --batch 5 --repeat 1 2>&1) || fail "pd-infer after --input-shape ?: $out"
grep -q "Shape\|Gather" <<< "$(grep '^program' <<< "$out")" && fail "shape ops left after folding: $out"

# 2. Export of a pd-train model: opsets 11, 13, 17, round trip bitwise.
"$PD_TRAIN" "$HERE/tiny_mlp.yaml" --out "$WORK/mlp" --limit 256 --epochs 1 --threads 1 --quiet || fail "training the MLP exited with $?"
for opset in 11 13 17; do
  out=$("$PD_CONVERT" "$WORK/mlp/model.pdmodel" "$WORK/mlp_$opset.onnx" --opset $opset --verify "${NO_ORT[@]}" 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "export at opset $opset: exit $rc: $out"
  grep -q "re-import (round trip, bitwise): .*max abs 0, " <<< "$out" || fail "opset $opset round trip not bitwise: $out"
done
# An export imports back beside itself (m.onnx -> m.pdmodel + m.pdiparams: an ONNX file has no params
# file to protect), and the model it wrote is never written over by an import.
"$PD_CONVERT" "$WORK/mlp_17.onnx" "$WORK/mlp_17.pdmodel" > /dev/null 2>&1 || fail "import beside the .onnx was refused"
[ -s "$WORK/mlp_17.pdiparams" ] || fail "import beside the .onnx wrote no params"
"$PD_CONVERT" "$WORK/mlp_17.onnx" "$WORK/mlp_17.pdmodel" > /dev/null 2>&1 || fail "a second import beside the .onnx was refused"
out=$("$PD_CONVERT" "$WORK/mlp/model.pdmodel" "$WORK/mlp/model.pdmodel" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "converting a model onto itself: exit $rc: $out"
# The imported fixtures export again (layer_norm decomposed before opset 17 is said so).
out=$("$PD_CONVERT" "$WORK/encoder.pdmodel" "$WORK/encoder_13.onnx" --opset 13 --verify "${NO_ORT[@]}" 2>&1) || fail "encoder re-export: $out"
grep -q "decomposed for ONNX: layer_norm" <<< "$out" || fail "the decomposition is not reported: $out"
out=$("$PD_CONVERT" "$WORK/encoder.pdmodel" "$WORK/encoder_17.onnx" --opset 17 --verify "${NO_ORT[@]}" 2>&1) || fail "encoder at 17: $out"
grep -q "bitwise): .*max abs 0, " <<< "$out" || fail "encoder at opset 17 not bitwise: $out"

# 3. onnxruntime, when the python given by $PD_PYTHON has it.
if [ -n "${PD_PYTHON:-}" ] && "$PD_PYTHON" -c "import onnxruntime" 2>/dev/null; then
  out=$("$PD_CONVERT" "$DATA/convnet.onnx" "$WORK/c.pdmodel" --verify --batch 5 --python "$PD_PYTHON" 2>&1) || fail "vs onnxruntime: $out"
  grep -q "verify vs onnxruntime: output: .* -> ok" <<< "$out" || fail "onnxruntime not compared: $out"
  out=$("$PD_CONVERT" "$WORK/mlp/model.pdmodel" "$WORK/m.onnx" --verify --python "$PD_PYTHON" 2>&1) || fail "export vs onnxruntime: $out"
  grep -q "verify vs onnxruntime: .* -> ok" <<< "$out" || fail "exported model not run by onnxruntime: $out"
else
  echo "note: onnxruntime not found through \$PD_PYTHON; its comparisons were skipped"
fi
# Nothing to compare with: exit 1, nothing written.
out=$("$PD_CONVERT" "$DATA/dense_fire.onnx" "$WORK/none.pdmodel" --verify "${NO_ORT[@]}" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "found nothing to compare with" <<< "$out" || fail "--verify with no reference: $rc $out"
[ -e "$WORK/none.pdmodel" ] && fail "--verify without a reference wrote the model"
# A wrong reference: exit 1 naming the output, nothing written.
"$PD_CONVERT" "$DATA/dense_fire.onnx" "$WORK/ok.pdmodel" >/dev/null 2>&1 || fail "plain import failed"
out=$("$PD_CONVERT" "$DATA/dense_fire.onnx" "$WORK/wrong.pdmodel" --verify "${NO_ORT[@]}" --input "input=$DATA/dense_fire.input.npy" \
      --reference "output=$DATA/convnet.output.npy" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "output: MISMATCH" <<< "$out" || fail "a wrong reference: $rc $out"
[ -e "$WORK/wrong.pdmodel" ] && fail "a failed --verify wrote the model"

# 4. Bad input: exit 2 with the reason, nothing written.
expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN in the message
  local pattern=$1; shift
  out=$("$PD_CONVERT" "$@" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q -- "$pattern" <<< "$out" || fail "pd-convert $*: expected exit 2 with '$pattern', got $rc: $out"
}
head -c 2000 "$DATA/convnet.onnx" > "$WORK/truncated.onnx"
expect_error "truncated or corrupted" "$WORK/truncated.onnx" "$WORK/t.pdmodel"
printf 'hello world, not a model' > "$WORK/text.onnx"
expect_error "not a model this tool reads" "$WORK/text.onnx" "$WORK/t.pdmodel"
expect_error "Celu x2 (first: celu0, celu1)" "$DATA/bad_unsupported.onnx" "$WORK/t.pdmodel"
expect_error "com.microsoft::FusedGemm x1" "$DATA/bad_unsupported.onnx" "$WORK/t.pdmodel"
expect_error "Mish x1" "$DATA/bad_unsupported.onnx" "$WORK/t.pdmodel"
expect_error "opset 24 is out of the supported range 11-23" "$DATA/bad_opset.onnx" "$WORK/t.pdmodel"
expect_error "node 'shrink' (Resize): antialias=1" "$DATA/bad_antialias.onnx" "$WORK/t.pdmodel"
expect_error "12 bytes of data for dims \[4\]" "$DATA/bad_initializer.onnx" "$WORK/t.pdmodel"
expect_error "weights.bin" "$DATA/bad_external.onnx" "$WORK/t.pdmodel"
expect_error "ghost" "$DATA/bad_undefined.onnx" "$WORK/t.pdmodel"
expect_error "Gemm.*differ in dimension 1: (3) vs (4)" "$DATA/bad_shapes.onnx" "$WORK/t.pdmodel"
expect_error "scatter0.*ScatterND on values computed at run time is not supported" "$DATA/bad_scatter_runtime.onnx" "$WORK/t.pdmodel"
expect_error "scatter1.*index 4 of tuple 0 is out of range for extent 4 of data \[2, 4\]" "$DATA/bad_scatter_index.onnx" "$WORK/t.pdmodel"
expect_error "neither .onnx nor .pdmodel" "$DATA/convnet.onnx" "$WORK/t.txt"
expect_error "no input 'image'" "$DATA/convnet.onnx" "$WORK/t.pdmodel" --input-shape image=1x1x32x32
expect_error "neither a positive integer nor ?" "$DATA/convnet.onnx" "$WORK/t.pdmodel" --input-shape input=1xax32x32
expect_error "must be an ONNX opset from 11 to 17, got 9" "$WORK/mlp/model.pdmodel" "$WORK/t.onnx" --opset 9
expect_error "the output is the input file" "$DATA/convnet.onnx" "$DATA/convnet.onnx"
expect_error "no such file" "$WORK/missing.onnx" "$WORK/t.pdmodel"
ls "$WORK"/t.* >/dev/null 2>&1 && fail "a refused conversion wrote $(ls "$WORK"/t.*)"
# A lowered model is refused by export with the way out.
"$PD_OPT" "$WORK/mlp/model.pdmodel" "$WORK/lowered.pdmodel" --target host >/dev/null 2>&1 || fail "pd-opt --target host failed"
expect_error "export the portable model" "$WORK/lowered.pdmodel" "$WORK/t.onnx"

# 5. Damaged files never crash: truncations and byte changes over the graph and the weights exit 0-2.
size=$(stat -c %s "$DATA/convnet.onnx")
for i in $(seq 1 25); do
  for off in $(( (i * 7919) % size )) $(( (i * 67) % 2000 )); do
    head -c "$off" "$DATA/convnet.onnx" > "$WORK/cut.onnx"
    cp "$DATA/convnet.onnx" "$WORK/flip.onnx"
    printf "\\x$(printf %02x $(( (i * 37 + off) % 256 )))" | dd of="$WORK/flip.onnx" bs=1 seek="$off" conv=notrunc 2>/dev/null
    for f in cut flip; do
      "$PD_CONVERT" "$WORK/$f.onnx" "$WORK/$f.pdmodel" > "$WORK/damaged.log" 2>&1; rc=$?
      [ $rc -le 2 ] || fail "$f.onnx damaged at byte $off: exit $rc (a crash): $(tail -3 "$WORK/damaged.log")"
    done
  done
done
exit $((fails > 0))
