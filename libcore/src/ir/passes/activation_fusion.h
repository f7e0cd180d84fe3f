// The shared shape of conv_act_fuse and linear_act_fuse: BASE followed by an activation becomes
// FUSED(..., activation, alpha); so does a FUSED op that has no activation yet (a conv that took a
// residual). Preconditions: the activation's input is that op's output, which feeds nothing else and
// is not a graph output (it disappears); float dtype (the fused kernels' types).
#pragma once
#include "elementwise_ops.h"
#include "passes.h"

namespace pd::ir::passes {

class ActivationFusion final : public Pass {
 public:
  ActivationFusion(std::string name, std::string base, std::string fused)
      : name_(std::move(name)), base_(std::move(base)), fused_(std::move(fused)) {}
  std::string name() const override { return name_; }
  bool lowering() const override { return true; }
  std::string doc() const override { return base_ + " + activation -> " + fused_; }
  // Every activation of ops.yaml (`activation: true`), from the generated table.
  std::vector<std::string> targets() const override {
    std::vector<std::string> out;
    for (size_t i = 1; i < kActivationCount; ++i) out.push_back(kActivations[i].name);  // [0] is "none"
    return out;
  }

  bool match(const Program& p, int32_t i) const override {
    const ValueId x = p.ops()[i].inputs[0][0];
    const Value& v = p.value(x);
    if (v.kind != ValueKind::OpResult || v.producer < 0) return false;
    const Operation& producer = p.ops()[v.producer];
    if (producer.type != base_ && !(producer.type == fused_ && attr_string(producer, "activation") == "none")) return false;
    if (channels_last_op(producer)) return false;
    if (v.type.dtype != DType::f32 && v.type.dtype != DType::f64) return false;
    return !p.is_output(x) && p.users(x).size() == 1;
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation act = p.ops()[i];
    const int32_t c = p.value(act.inputs[0][0]).producer;
    const Operation base = p.ops()[c];
    AttrMap attrs = base.attrs;
    attrs.erase("channels_last");  // false (channels_last_op): the fused ops are NCHW
    attrs["activation"] = act.type;
    if (const char* alpha = kActivations[static_cast<size_t>(parse_activation(fused_.c_str(), act.type))].alpha)
      attrs["alpha"] = attr_float(act, alpha);
    // BASE's input slots, then FUSED's extra optional ones empty (fused_conv2d's residual).
    std::vector<std::vector<ValueId>> inputs = base.inputs;
    inputs.resize(tensor_slots(fused_));
    // Inserted where the activation was: every input of BASE is defined before that.
    const ValueId fused = p.insert_op(i, fused_, inputs, attrs)[0];
    p.replace_uses(act.results[0], fused);
    p.remove_ops({c, i + 1});
    ++stats.fused;
  }

 private:
  std::string name_, base_, fused_;
};

}  // namespace pd::ir::passes
