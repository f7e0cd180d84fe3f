// compile(): the load-time stage. The lowering passes are the same pass objects pd-opt runs; what makes
// them load-time is that they may assume the target (Pass::supports) and write kernel layouts.
#include "pd/exec/plan.h"

#include <algorithm>
#include <optional>

#include "pd/core/threads.h"
#include "pd/ops/dispatch.h"
#include "pd/ops/op_schema.h"

namespace pd::exec {
namespace {

// The kernel of every op, chosen as the op API would for the declared input types on the target's
// place, with the target's backends (a target without oneDNN binds the reference kernels). A missing
// kernel is an error here, at load, naming the op.
std::vector<AnyKernel> bind_kernels(const ir::Program& p, const Target& target) {
  std::optional<ScopedKernelBackend> reference_only;
  if (std::find(target.backends.begin(), target.backends.end(), Backend::onednn) == target.backends.end())
    reference_only.emplace(Backend::reference);
  std::vector<AnyKernel> kernels;
  for (size_t k = 0; k < p.ops().size(); ++k) {
    const ir::Operation& op = p.ops()[k];
    const OpSchema& schema = op_schema(op.type);
    if (!schema.bind) {
      kernels.push_back(nullptr);
      continue;
    }
    MetaInputs metas;
    for (const auto& slot : op.inputs) {
      metas.emplace_back();
      for (ir::ValueId v : slot) metas.back().push_back({p.value(v).type.dtype, p.value(v).type.shape});
    }
    try {
      kernels.push_back(schema.bind(metas, op.attrs, target.place));
    } catch (const Error& e) {
      raise(e.code(), "op #{} '{}' (computing %{}) on {}: {}", k, op.type,
            op.results.empty() ? "?" : p.value(op.results[0]).name, target.str(), e.what());
    }
  }
  return kernels;
}

}  // namespace

ExecPlan compile(const ir::Program& program, const Target& target, const CompileOptions& options) {
  ExecPlan plan;
  plan.program_ = program;
  plan.target_ = target;
  plan.source_ops_ = static_cast<int64_t>(program.ops().size());
  // Params live where the target runs (no copy when they already do: CPU to CPU).
  for (ir::ValueId id = 0; id < static_cast<ir::ValueId>(program.values().size()); ++id)
    if (program.value(id).kind == ir::ValueKind::Param) plan.program_.set_param(id, program.param(id).to(target.place));
  if (!program.target().empty()) {
    const Target lowered = Target::parse(program.target());
    PD_CHECK(target.can_run(lowered), ErrorCode::kInvalidArgument,
             "the model was lowered by pd-opt for {}, which this machine ({}) cannot run; give it the portable model "
             "(pd-opt without --target), which is lowered for the machine when it is loaded",
             program.target(), target.str());
  } else if (options.lower) {
    // The level's passes keep the program portable and are idempotent: a model pd-opt already optimised
    // passes through them unchanged.
    ir::PassOptions passes;
    passes.level = options.level;
    passes.lower = true;
    passes.disable = options.disable;  // unknown names are errors there
    passes.target = target;
    passes.batch_hint = options.batch_hint;
    // Folding runs ops on the params; on OpenMP's team they would leave it awake for the first runs,
    // which then start on it and keep it awake run after run (pd/core/thread_pool.h).
    OneThreadIf single(true);
    plan.report_ = ir::PassManager(passes).run(plan.program_);
  }
  plan.kernels_ = bind_kernels(plan.program_, target);
  return plan;
}

}  // namespace pd::exec
