// The shared shape of conv_residual_fuse and linear_residual_fuse: add(BASE(...), r) becomes
// FUSED(..., residual = r), the kernel adding the residual as it writes (a post-op or epilogue) so the sum never
// makes its own pass over memory. The activation fusion that runs next can still fold a closing relu
// into the same op (activation(BASE + residual), the fused ops' order).
//
// Preconditions: one operand of the add is the result of an op `plain` accepts, read only by this add
// and not a graph output; the other operand has exactly the add's type (no broadcasting, no promotion),
// float. When both qualify, `preferred` breaks the tie (else the later producer).
#pragma once
#include <string>
#include <utility>

#include "passes.h"

namespace pd::ir::passes {

using OpTest = bool (*)(const Program& p, int32_t op);

// Which operand (0 or 1) of add op `i` is the fusable op's result, or -1.
inline int residual_operand(const Program& p, int32_t i, OpTest plain, OpTest preferred) {
  const Operation& add = p.ops()[i];
  if (add.type != "add" || add.inputs.size() != 2 || add.inputs[0].size() != 1 || add.inputs[1].size() != 1) return -1;
  const ValueType& out = p.value(add.results[0]).type;
  if (out.dtype != DType::f32 && out.dtype != DType::f64) return -1;
  int best = -1;
  std::pair<bool, int32_t> best_rank{false, -1};
  for (int k = 0; k < 2; ++k) {
    const ValueId v = add.inputs[k][0], other = add.inputs[1 - k][0];
    const Value& val = p.value(v);
    if (val.kind != ValueKind::OpResult || val.producer < 0 || !plain(p, val.producer)) continue;
    if (v == other || val.type != out || p.value(other).type != out) continue;
    if (p.is_output(v) || p.users(v).size() != 1) continue;
    const std::pair<bool, int32_t> rank{preferred(p, val.producer), val.producer};
    if (rank > best_rank) best = k, best_rank = rank;
  }
  return best;
}

class ResidualFusion final : public Pass {
 public:
  using Operand = int (*)(const Program& p, int32_t add);
  ResidualFusion(std::string name, std::string base, std::string fused, size_t residual_slot, Operand operand)
      : name_(std::move(name)), base_(std::move(base)), fused_(std::move(fused)), slot_(residual_slot), operand_(operand) {}
  std::string name() const override { return name_; }
  bool lowering() const override { return true; }
  std::string doc() const override { return base_ + " + add(residual) -> " + fused_ + " with a residual"; }
  std::vector<std::string> targets() const override { return {"add"}; }

  bool match(const Program& p, int32_t i) const override { return operand_(p, i) >= 0; }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const int k = operand_(p, i);
    const Operation add = p.ops()[i];
    const ValueId base_out = add.inputs[k][0], residual = add.inputs[1 - k][0];
    const int32_t c = p.value(base_out).producer;
    const Operation base = p.ops()[c];
    std::vector<std::vector<ValueId>> inputs = base.inputs;
    inputs.resize(tensor_slots(fused_));
    inputs[slot_] = {residual};
    // At the add's place: the base op's inputs and the residual are all defined before it.
    AttrMap attrs = base.attrs;
    attrs.erase("channels_last");  // false (the operand test refuses channels_last_op): the fused ops are NCHW
    const ValueId fused = p.insert_op(i, fused_, inputs, attrs)[0];
    p.replace_uses(add.results[0], fused);
    p.remove_ops({c, i + 1});
    ++stats.fused;
  }

 private:
  std::string name_, base_, fused_;
  size_t slot_;
  Operand operand_;
};

}  // namespace pd::ir::passes
