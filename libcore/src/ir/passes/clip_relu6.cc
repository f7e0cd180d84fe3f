// clip(x, 0, 6) -> relu6(x): ONNX has no ReLU6, so exporters write MobileNet's as Clip with bounds 0 and
// 6, which pd-convert imports as clip. As relu6 it is an activation the conv / linear activation
// fusions take (MobileNetV2 from torchvision: 35 clips, two thirds of its time run after their
// convolutions as separate passes over the maps). Both keep NaN and give the same values, bit for bit.
// f32 only: relu6's kernels are float ones.
#include "passes.h"

namespace pd::ir::passes {
namespace {

class ClipRelu6 final : public Pass {
 public:
  std::string name() const override { return "clip_relu6"; }
  std::string doc() const override { return "clip(x, 0, 6) -> relu6(x), the activation ONNX exporters write as Clip"; }
  std::vector<std::string> targets() const override { return {"clip"}; }
  bool match(const Program& p, int32_t i) const override {
    const Operation& op = p.ops()[i];
    return p.value(input_of(p, i, 0)).type.dtype == DType::f32 && attr_float(op, "min") == 0.0 && attr_float(op, "max") == 6.0;
  }
  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation clip = p.ops()[i];
    const ValueId out = p.insert_op(i, "relu6", {{clip.inputs[0][0]}}, {})[0];
    p.replace_uses(clip.results[0], out);
    p.remove_ops({i + 1});
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> clip_relu6() { return std::make_unique<ClipRelu6>(); }

}  // namespace pd::ir::passes
