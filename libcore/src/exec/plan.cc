// compile(): the load-time stage. The lowering passes are the same pass objects pd-opt runs; what makes
// them load-time is that they may assume the target (Pass::supports) and write kernel layouts.
#include "pd/exec/plan.h"

#include <algorithm>

namespace pd::exec {

ExecPlan compile(const ir::Program& program, const Target& target, const CompileOptions& options) {
  ExecPlan plan;
  plan.program_ = program;
  plan.target_ = target;
  plan.source_ops_ = static_cast<int64_t>(program.ops().size());
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
  passes.target = target;
  for (const std::string& n : options.disable) ir::make_pass(n);  // unknown names are errors
  std::erase_if(passes.passes, [&](const std::string& n) {
    return std::find(options.disable.begin(), options.disable.end(), n) != options.disable.end();
  });
  plan.report_ = ir::PassManager(passes).run(plan.program_);
  return plan;
}

}  // namespace pd::exec
