// Dead-code elimination: an op none of whose results is used or a graph output goes, unless running
// it has an effect (batch_norm in training mode updates its running statistics in place).
#include "passes.h"

namespace pd::ir::passes {
namespace {

class DeadCode final : public Pass {
 public:
  std::string name() const override { return "dce"; }
  std::string doc() const override { return "removes ops whose results nothing uses"; }
  bool match(const Program& p, int32_t i) const override {
    const Operation& op = p.ops()[i];
    for (ValueId r : op.results)
      if (p.is_output(r) || !p.users(r).empty()) return false;
    return !(op.type == "batch_norm" && attr_bool(op, "training"));
  }
  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    p.remove_ops({i});
    ++stats.removed;
  }
};

}  // namespace

std::unique_ptr<Pass> dead_code_elimination() { return std::make_unique<DeadCode>(); }

}  // namespace pd::ir::passes
