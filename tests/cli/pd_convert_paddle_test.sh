#!/usr/bin/env bash
# End-to-end checks of pd-convert on PaddlePaddle models: the committed fixtures (tests/data/paddle, saved
# by paddle.jit.save in PaddlePaddle 2.6 as ProgramDesc .pdmodel and in 3.3 as PIR .json, with
# make_fixtures.py; the decoder's interpolations and transposed convolution, the super-resolution head's
# bicubic resizing, the segmentation head's sizes from paddle.shape) import and match Paddle's saved outputs within 1e-4 with identical argmax, keep their
# dynamic batch through pd-infer, and export on to ONNX. With paddle installed ($PD_PADDLE_PYTHON), --verify
# also runs paddle.inference. Bad input (truncated or corrupted programs, params of another model, missing
# params, unsupported ops listed in full) exits 2 and writes nothing; damaged files never crash.
source "$(dirname "$0")/common.sh"
PD_CONVERT=$1
PD_INFER=$2
DATA=$HERE/../data/paddle
NO_RUNTIME=(--python /nonexistent/python)  # the saved outputs are the reference, whatever is installed

inputs_of() {  # the --input flags of fixture $1
  case $1 in
    *lenet) echo "--input image=$DATA/$1.input0.npy" ;;
    *resnet|*decoder|*superres|*seghead) echo "--input x=$DATA/$1.input0.npy" ;;
    *encoder) echo "--input ids=$DATA/$1.input0.npy --input mask=$DATA/$1.input1.npy" ;;
  esac
}

# 1. Every fixture, both formats, imports and matches Paddle's saved output.
for m in p2_lenet p2_resnet p2_encoder p2_decoder p2_superres p2_seghead p3_lenet p3_resnet p3_encoder p3_decoder p3_superres p3_seghead; do
  src=$DATA/$m.pdmodel; format=ProgramDesc; output=fetch_name_0
  [ "${m:0:2}" = p3 ] && src=$DATA/$m.json && format=PIR
  [ "${m:0:2}" = p2 ] && output=$("$PD_CONVERT" "$src" "$WORK/probe.pdmodel" --report 2>&1 | sed -n 's/^outputs: \([^:]*\):.*/\1/p')
  # shellcheck disable=SC2046
  out=$("$PD_CONVERT" "$src" "$WORK/$m.pdmodel" --verify --report "${NO_RUNTIME[@]}" $(inputs_of $m) \
        --reference "$output=$DATA/$m.output.npy" 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "$m: exit $rc: $out"
  grep -q "verify vs --reference: .*argmax agrees \([0-9]*\)/\1 -> ok" <<< "$out" || fail "$m: no match: $out"
  grep -q "^source: PaddlePaddle $format" <<< "$out" || fail "$m: --report does not name $format: $out"
  grep -q "[1-9][0-9]* bias adds taken into conv2d/linear" <<< "$out" || fail "$m: no bias add was fused: $out"
  grep -q "^program: .*elementwise\|^program: .*matmul_v2" <<< "$out" && fail "$m: Paddle op names left in the program: $out"
done
# Both formats give the same program for the same model.
for m in lenet resnet encoder decoder superres seghead; do
  p2=$("$PD_CONVERT" "$DATA/p2_$m.pdmodel" "$WORK/x.pdmodel" --report 2>&1 | grep '^program:')
  p3=$("$PD_CONVERT" "$DATA/p3_$m.json" "$WORK/x.pdmodel" --report 2>&1 | grep '^program:')
  [ "$p2" = "$p3" ] || fail "$m: 2.x and 3.x programs differ: '$p2' vs '$p3'"
done

# 2. The batch stays dynamic: pd-infer runs the imported encoder at batch 5; --input-shape fixes it.
out=$("$PD_INFER" "$WORK/p3_encoder.pdmodel" --batch 5 --repeat 1 --output-dir "$WORK/out5" 2>&1) || fail "pd-infer on the encoder: $out"
[ "$(od -An -c -N 80 "$WORK/out5/fetch_name_0.npy" | tr -d ' \n' | grep -o "(5,3)")" = "(5,3)" ] || fail "no (5, 3) output: $out"
# A 2.x fetch name holds '/' (save_infer_model/scale_0.tmp_0): --output-dir writes it as one file.
out=$("$PD_INFER" "$WORK/p2_lenet.pdmodel" --batch 2 --repeat 1 --output-dir "$WORK/out2" 2>&1) || fail "pd-infer --output-dir on a 2.x model: $out"
[ -s "$WORK/out2/save_infer_model_scale_0.tmp_0.npy" ] || fail "the output with '/' in its name was not written: $(ls -R "$WORK/out2")"
out=$("$PD_CONVERT" "$DATA/p2_lenet.pdmodel" "$WORK/lenet_b3.pdmodel" --input-shape image=3x1x28x28 --report 2>&1) || fail "--input-shape: $out"
grep -q "inputs: image: f32\[3, 1, 28, 28\]" <<< "$out" || fail "--input-shape not applied: $out"
# Resized to paddle.shape(x)[2:] with the spatial extents left to run time (PaddleSeg's default export):
# refused by name until --input-shape fixes them, then the numbers of the fixed-size export.
for m in p2_seghead_any_size p3_seghead_any_size; do
  src=$DATA/$m.pdmodel; [ "${m:0:2}" = p3 ] && src=$DATA/$m.json
  out=$("$PD_CONVERT" "$src" "$WORK/any.pdmodel" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "the output size from input 'OutSize' .*known only at run time; give --input-shape" <<< "$out" ||
    fail "$m without --input-shape: expected exit 2 naming OutSize, got $rc: $out"
  fixed=${m%_any_size}
  output=$("$PD_CONVERT" "$src" "$WORK/probe.pdmodel" --input-shape x=2x3x12x10 --report 2>&1 | sed -n 's/^outputs: \([^:]*\):.*/\1/p')
  out=$("$PD_CONVERT" "$src" "$WORK/any.pdmodel" --input-shape x=2x3x12x10 --verify "${NO_RUNTIME[@]}" \
        --input "x=$DATA/$fixed.input0.npy" --reference "$output=$DATA/$fixed.output.npy" 2>&1) || fail "$m with --input-shape: $out"
done

# 3. On to ONNX: a Paddle model exports, and the ONNX file imports back to the same outputs.
# shellcheck disable=SC2046
out=$("$PD_CONVERT" "$DATA/p3_resnet.json" "$WORK/resnet.onnx" --opset 13 --verify "${NO_RUNTIME[@]}" $(inputs_of p3_resnet) \
      --reference "fetch_name_0=$DATA/p3_resnet.output.npy" 2>&1) || fail "Paddle -> ONNX: $out"
# shellcheck disable=SC2046
out=$("$PD_CONVERT" "$WORK/resnet.onnx" "$WORK/resnet_back.pdmodel" --verify "${NO_RUNTIME[@]}" $(inputs_of p3_resnet) \
      --reference "fetch_name_0=$DATA/p3_resnet.output.npy" 2>&1) || fail "Paddle -> ONNX -> ours: $out"

# 4. paddle itself, when the python given by $PD_PADDLE_PYTHON has it.
if [ -n "${PD_PADDLE_PYTHON:-}" ] && "$PD_PADDLE_PYTHON" -c "import paddle" 2>/dev/null; then
  src=$DATA/p2_encoder.pdmodel
  "$PD_PADDLE_PYTHON" -c "import paddle,sys; sys.exit(int(paddle.__version__.split('.')[0]) < 3)" && src=$DATA/p3_encoder.json
  # shellcheck disable=SC2046
  out=$("$PD_CONVERT" "$src" "$WORK/e.pdmodel" --verify --python "$PD_PADDLE_PYTHON" $(inputs_of p2_encoder) 2>&1) || fail "vs paddle: $out"
  grep -q "verify vs paddle: .* -> ok" <<< "$out" || fail "paddle not compared: $out"
else
  echo "note: paddle not found through \$PD_PADDLE_PYTHON; its comparison was skipped"
fi

# 5. Bad input: exit 2 with the reason, nothing written.
expect_error() {  # expect_error PATTERN ARGS...: exit 2 and PATTERN in the message
  local pattern=$1; shift
  out=$("$PD_CONVERT" "$@" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q -- "$pattern" <<< "$out" || fail "pd-convert $*: expected exit 2 with '$pattern', got $rc: $out"
}
head -c 5000 "$DATA/p2_lenet.pdmodel" > "$WORK/cut.pdmodel"
expect_error "the protobuf does not parse" "$WORK/cut.pdmodel" "$WORK/t.pdmodel"
cp "$DATA/p2_lenet.pdmodel" "$WORK/lonely.pdmodel"
expect_error "lonely.pdiparams does not exist (give it with --params)" "$WORK/lonely.pdmodel" "$WORK/t.pdmodel"
expect_error "is f32\[50, 32\] in the file but f32\[6\] in the program: the params file does not belong" \
  "$DATA/p2_lenet.pdmodel" "$WORK/t.pdmodel" --params "$DATA/p2_encoder.pdiparams"
head -c 100000 "$DATA/p2_lenet.pdiparams" > "$WORK/short.pdiparams"
expect_error "truncated: parameter 8 of 10 ('linear_0.w_0')" "$DATA/p2_lenet.pdmodel" "$WORK/t.pdmodel" --params "$WORK/short.pdiparams"
cat "$DATA/p2_lenet.pdiparams" "$DATA/p2_lenet.pdiparams" > "$WORK/long.pdiparams"
expect_error "bytes follow the program's 10 parameters" "$DATA/p2_lenet.pdmodel" "$WORK/t.pdmodel" --params "$WORK/long.pdiparams"
head -c 3000 "$DATA/p3_lenet.json" > "$WORK/cut.json"
expect_error "not a model this tool reads\|not valid JSON" "$WORK/cut.json" "$WORK/t.pdmodel"
sed 's/"1.relu"/"1.celu"/; s/"1.sigmoid"/"1.mish"/' "$DATA/p3_lenet.json" > "$WORK/unsupported.json"
expect_error "2 op types this toolchain cannot map yet" "$WORK/unsupported.json" "$WORK/t.pdmodel" --params "$DATA/p3_lenet.pdiparams"
expect_error "celu x1 (first: op #15 celu" "$WORK/unsupported.json" "$WORK/t.pdmodel" --params "$DATA/p3_lenet.pdiparams"
expect_error "mish x1" "$WORK/unsupported.json" "$WORK/t.pdmodel" --params "$DATA/p3_lenet.pdiparams"
sed 's/hard_swish/hard_swizz/g' "$DATA/p2_lenet.pdmodel" > "$WORK/unsupported.pdmodel"
expect_error "hard_swizz x1 (first: op #9" "$WORK/unsupported.pdmodel" "$WORK/t.pdmodel" --params "$DATA/p2_lenet.pdiparams"
expect_error "no input 'x'" "$DATA/p2_lenet.pdmodel" "$WORK/t.pdmodel" --input-shape x=1x1x28x28
expect_error "extent 2 is fixed at 28" "$DATA/p2_lenet.pdmodel" "$WORK/t.pdmodel" --input-shape image=1x1x32x32
expect_error "--params applies to PaddlePaddle sources" "$HERE/../data/onnx/convnet.onnx" "$WORK/t.pdmodel" --params x
ls "$WORK"/t.* >/dev/null 2>&1 && fail "a refused conversion wrote $(ls "$WORK"/t.*)"

# 6. Damaged files never crash: truncations and byte changes of program and params exit 0-2.
for f in p2_resnet.pdmodel p2_resnet.pdiparams p3_resnet.json; do
  size=$(stat -c %s "$DATA/$f")
  ext=${f##*.}
  for i in $(seq 1 15); do
    off=$(( (i * 7919) % size ))
    for kind in cut flip; do
      cp "$DATA/p2_resnet.pdmodel" "$WORK/d.pdmodel"; cp "$DATA/p2_resnet.pdiparams" "$WORK/d.pdiparams"
      cp "$DATA/p3_resnet.json" "$WORK/d.json"
      if [ $kind = cut ]; then head -c "$off" "$DATA/$f" > "$WORK/d.$ext"
      else printf "\\x$(printf %02x $(( (i * 37 + off) % 256 )))" | dd of="$WORK/d.$ext" bs=1 seek="$off" conv=notrunc 2>/dev/null; fi
      src=$WORK/d.pdmodel; [ "$ext" = json ] && src=$WORK/d.json
      "$PD_CONVERT" "$src" "$WORK/d_out.pdmodel" --params "$WORK/d.pdiparams" > "$WORK/damaged.log" 2>&1; rc=$?
      [ $rc -le 2 ] || fail "$f $kind at byte $off: exit $rc (a crash): $(tail -3 "$WORK/damaged.log")"
    done
  done
done
exit $((fails > 0))
