// Elementwise chain fusion: a tree of two or more elementwise ops (add, mul, relu, gelu, clip, ...)
// whose intermediates feed only the next op becomes one fused_elementwise op, which reads the inputs
// once and writes only the final result (a residual add + relu, a bias + gelu, x * sigmoid(x) ...).
//
// An op joins its consumer's group only where that pays and is exact:
//   - its result has that one reader and is not a graph output (it disappears);
//   - its result has the final shape, so fusing never recomputes a small tensor once per element of
//     a big one (exp of a bias broadcast over an image stays a separate op);
//   - every value involved has the group's float dtype, so no implicit promotion is skipped.
#include <algorithm>

#include "passes.h"
#include "pd/kernels/elementwise_expr.h"

namespace pd::ir::passes {
namespace {

bool fusible(const Program& p, int32_t i, ewise::Fn* fn = nullptr) {
  const Operation& op = p.ops()[i];
  ewise::Fn f;
  if (!ewise::find_fn(op.type, &f) || op.results.size() != 1) return false;
  const DType dt = p.value(op.results[0]).type.dtype;
  if (dt != DType::f32 && dt != DType::f64) return false;
  for (const auto& slot : op.inputs)
    for (ValueId v : slot)
      if (p.value(v).type.dtype != dt) return false;
  if (fn) *fn = f;
  return true;
}

// Operand slots reading `v` (mul(v, v) counts twice).
int64_t uses(const Program& p, ValueId v) {
  int64_t n = 0;
  for (const Operation& op : p.ops())
    for (const auto& slot : op.inputs) n += std::count(slot.begin(), slot.end(), v);
  return n;
}

// Whether the producer of `v` joins a group whose final result has type `root`.
bool absorbable(const Program& p, ValueId v, const ValueType& root) {
  const Value& val = p.value(v);
  return val.kind == ValueKind::OpResult && val.producer >= 0 && fusible(p, val.producer) && val.type == root &&
         !p.is_output(v) && uses(p, v) == 1;
}

// The ops of the group ending at `root` (root last) and the expression text over its leaves.
struct Group {
  std::vector<int32_t> members;
  std::vector<ValueId> leaves;
  std::string expr;
};

class GroupBuilder {
 public:
  GroupBuilder(const Program& p, int32_t root) : p_(p), root_type_(p.value(p.ops()[root].results[0]).type) {
    group_.expr = text_of(root);
  }
  Group take() { return std::move(group_); }

 private:
  std::string text_of(int32_t i) {
    const Operation& op = p_.ops()[i];
    ewise::Fn fn;
    fusible(p_, i, &fn);
    std::vector<std::string> operands;
    for (const auto& slot : op.inputs)
      for (ValueId v : slot) operands.push_back(operand(v));
    std::vector<double> consts;
    for (const char* c : ewise::info(fn).consts) consts.push_back(attr_float(op, c));
    group_.members.push_back(i);
    return ewise::call(fn, operands, consts);
  }
  std::string operand(ValueId v) {
    if (absorbable(p_, v, root_type_)) return text_of(p_.value(v).producer);
    for (size_t k = 0; k < group_.leaves.size(); ++k)
      if (group_.leaves[k] == v) return ewise::input(static_cast<int>(k));
    group_.leaves.push_back(v);
    return ewise::input(static_cast<int>(group_.leaves.size() - 1));
  }

  const Program& p_;
  ValueType root_type_;
  Group group_;
};

class ElementwiseFusion final : public Pass {
 public:
  std::string name() const override { return "elementwise_fuse"; }
  bool lowering() const override { return true; }
  std::string doc() const override { return "chains of elementwise ops -> fused_elementwise"; }

  // A root: a fusible op that its own consumer will not absorb, with at least one absorbable operand.
  bool match(const Program& p, int32_t i) const override {
    if (!fusible(p, i)) return false;
    const ValueId out = p.ops()[i].results[0];
    const std::vector<int32_t> users = p.users(out);
    if (users.size() == 1 && fusible(p, users[0]) && absorbable(p, out, p.value(p.ops()[users[0]].results[0]).type))
      return false;
    for (const auto& slot : p.ops()[i].inputs)
      for (ValueId v : slot)
        if (absorbable(p, v, p.value(out).type)) return true;
    return false;
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    Group g = GroupBuilder(p, i).take();
    const ValueId old_out = p.ops()[i].results[0];
    const ValueId fused = p.insert_op(i, "fused_elementwise", {g.leaves}, {{"expr", g.expr}})[0];
    p.replace_uses(old_out, fused);
    // Members all sit at or before the root, which the insertion moved one down.
    for (int32_t& m : g.members) m += m >= i ? 1 : 0;
    p.remove_ops(g.members);
    stats.fused += static_cast<int64_t>(g.members.size()) - 1;
  }
};

}  // namespace

std::unique_ptr<Pass> elementwise_fusion() { return std::make_unique<ElementwiseFusion>(); }

}  // namespace pd::ir::passes
