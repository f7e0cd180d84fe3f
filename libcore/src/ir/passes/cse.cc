// Common-subexpression elimination: a later op with the same type, inputs and attributes as an earlier
// one is replaced by it. Random ops never merge (two draws are two different tensors), nor do ops that
// update their inputs in place.
#include "passes.h"
#include "pd/ops/op_schema.h"

namespace pd::ir::passes {
namespace {

bool mergeable(const Operation& op) {
  return !op_schema(op.type).random && !(op.type == "batch_norm" && attr_bool(op, "training"));
}

class CommonSubexpression final : public Pass {
 public:
  std::string name() const override { return "cse"; }
  std::string doc() const override { return "merges ops with the same type, inputs and attributes"; }
  bool match(const Program& p, int32_t i) const override { return twin(p, i) >= 0; }
  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const int32_t j = twin(p, i);
    const std::vector<ValueId> dup = p.ops()[i].results, keep = p.ops()[j].results;
    for (size_t k = 0; k < dup.size(); ++k) p.replace_uses(dup[k], keep[k]);
    p.remove_ops({i});
    ++stats.removed;
  }

 private:
  // The first earlier op computing the same thing, or -1.
  static int32_t twin(const Program& p, int32_t i) {
    const Operation& op = p.ops()[i];
    if (!mergeable(op)) return -1;
    for (int32_t j = 0; j < i; ++j) {
      const Operation& o = p.ops()[j];
      if (o.type == op.type && o.inputs == op.inputs && o.attrs == op.attrs) return j;
    }
    return -1;
  }
};

}  // namespace

std::unique_ptr<Pass> common_subexpression_elimination() { return std::make_unique<CommonSubexpression>(); }

}  // namespace pd::ir::passes
