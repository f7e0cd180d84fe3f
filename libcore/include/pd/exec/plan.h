// ExecPlan: a Program compiled for a Target, the second of the two optimisation stages
// (docs/architecture.md). compile() runs the portable passes of an optimisation level (-O2 by default:
// batch norms folded, attention and layer norms fused, as onnxruntime optimises a graph when a session
// starts) and then the target's lowering passes on a copy of the program (fused
// conv/linear + activation, conv + residual, conv + max pool, Winograd 3x3 convolutions, elementwise
// chains; later int8 and CUDA), binds every op's kernel once (the target's backends in order), moves
// the params to the target's place, and the plan owns the weights kernels pack for it. Saved models stay portable; a model pd-opt lowered for a named target is taken
// as it is, or refused with a message when this machine cannot run it.
//
//   pd::ir::Program model = pd::io::load_program("model.pdmodel");
//   pd::exec::ExecPlan plan = pd::exec::compile(model, pd::Target::host());
//   pd::exec::Executor exec(plan);                      // the plan must outlive the executor
//   std::vector<pd::Tensor> outs = exec.run({{"image", batch}});
#pragma once
#include <string>
#include <vector>

#include "pd/core/kernel_context.h"
#include "pd/core/packed_weights.h"
#include "pd/core/target.h"
#include "pd/ir/pass.h"
#include "pd/ir/program.h"

namespace pd::exec {

struct CompileOptions {
  bool lower = true;                 // run the target's lowering passes (pd-infer --no-lower: off)
  int level = 2;                     // with `lower`: the portable passes of this level first (pd-infer -O)
  int64_t batch_hint = 1;            // the batch it will mostly run at: lowering may choose by it (Pass::set_batch_hint)
  std::vector<std::string> disable = {};  // passes to leave out (throws for unknown names)
};

class ExecPlan {
 public:
  const ir::Program& program() const { return program_; }
  const Target& target() const { return target_; }
  // What each lowering pass did (empty when nothing was lowered here).
  const std::vector<ir::PassStats>& lowering_report() const { return report_; }
  // Ops of the program compile() was given, before lowering.
  int64_t source_ops() const { return source_ops_; }
  // Per op of program(): the kernel bound for the target (null for views, which have none).
  const std::vector<AnyKernel>& kernels() const { return kernels_; }
  // Weights kernels keep in their own layout for this plan's params (pd/core/packed_weights.h).
  PackedWeights& packed_weights() { return packed_; }

 private:
  friend ExecPlan compile(const ir::Program&, const Target&, const CompileOptions&);
  ir::Program program_;
  Target target_;
  std::vector<ir::PassStats> report_;
  int64_t source_ops_ = 0;
  std::vector<AnyKernel> kernels_;
  PackedWeights packed_;
};

// Optimises (options.level) and lowers a copy of `program` for `target`. A program already lowered (Program::target() set) is not
// lowered again; it must be one `target` can run (same device, ISA at least as wide), else pd::Error
// (kInvalidArgument) names both targets and what to do.
ExecPlan compile(const ir::Program& program, const Target& target = Target::host(), const CompileOptions& options = {});

}  // namespace pd::exec
