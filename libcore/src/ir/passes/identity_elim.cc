// Identity removal: ops that return their input unchanged (dropout in eval mode, reshape or flatten to
// the same shape, cast to the same dtype) are bypassed. A shape with two unknown extents is not
// provably the same after a reshape, so at most one -1 is allowed.
#include <algorithm>

#include "passes.h"

namespace pd::ir::passes {
namespace {

bool same_known_shape(const ValueType& a, const ValueType& b) {
  return a == b && std::count(a.shape.begin(), a.shape.end(), -1) <= 1;
}

class IdentityElimination final : public Pass {
 public:
  std::string name() const override { return "identity_elim"; }
  std::string doc() const override { return "bypasses eval-mode dropout, same-shape reshape/flatten, same-dtype cast"; }
  std::vector<std::string> targets() const override { return {"dropout", "reshape", "flatten", "cast"}; }
  bool match(const Program& p, int32_t i) const override {
    const Operation& op = p.ops()[i];
    const ValueType& in = p.value(input_of(p, i, 0)).type;
    const ValueType& out = p.value(op.results[0]).type;
    if (op.type == "dropout") {
      // The mask output is ones in eval mode; bypassing is only safe when nobody reads it.
      return !attr_bool(op, "training") && p.users(op.results[1]).empty() && !p.is_output(op.results[1]);
    }
    if (op.type == "cast") return in.dtype == out.dtype;
    return same_known_shape(in, out);
  }
  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    p.replace_uses(p.ops()[i].results[0], input_of(p, i, 0));
    p.remove_ops({i});
    ++stats.removed;
  }
};

}  // namespace

std::unique_ptr<Pass> identity_elimination() { return std::make_unique<IdentityElimination>(); }

}  // namespace pd::ir::passes
