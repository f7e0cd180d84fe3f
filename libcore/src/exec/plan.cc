// compile(): the load-time stage. The lowering passes are the same pass objects pd-opt runs; what makes
// them load-time is that they may assume the target (Pass::supports) and write kernel layouts.
#include "pd/exec/plan.h"

namespace pd::exec {

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
    return plan;
  }
  if (!options.lower) return plan;
  ir::PassOptions passes;
  passes.passes = ir::lowering_passes();
  passes.disable = options.disable;  // unknown names are errors there
  passes.target = target;
  plan.report_ = ir::PassManager(passes).run(plan.program_);
  return plan;
}

}  // namespace pd::exec
