// Executor: runs a Program on CPU through the generated op API (each op's schema bound once, and with a
// plan each op's kernel), the same code path that trains. Inference mode records no autograd and frees each value after its last use,
// so peak memory stays well below the sum of all intermediates.
//
//   pd::exec::ExecPlan plan = pd::exec::compile(program);    // lowered for this machine (plan.h)
//   pd::exec::Executor exec(plan);                            // inference by default
//   std::vector<pd::Tensor> outs = exec.run({{"image", batch}});
//   exec.stats().peak_bytes;                                  // peak of live intermediates
//   pd::exec::Executor(program).run(...);                     // the program exactly as it is
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pd/core/packed_weights.h"
#include "pd/exec/plan.h"
#include "pd/ir/program.h"

namespace pd {
struct OpSchema;
}

namespace pd::exec {

struct ExecOptions {
  bool inference = true;     // NoGradGuard around the run
  bool reuse_memory = true;  // drop every intermediate after its last use
  bool time_ops = false;     // fill ExecStats::op_ns (one clock read per op)
};

struct ExecStats {
  int64_t peak_bytes = 0;           // largest total of live intermediate values during the run
  int64_t total_intermediate_bytes = 0;  // the sum over all intermediates (what keeping everything costs)
  int64_t ops_run = 0;
  std::vector<int64_t> op_ns;  // with ExecOptions::time_ops: each op's wall time, in program order
};

// The checks run() does on its inputs, for tools that must tell bad input (exit 2) from failures while
// running (exit 1): every program input present, no unknown names, dtypes equal, shapes equal except
// at -1. Throws pd::Error whose message lists what the program expects.
void check_inputs(const ir::Program& program, const std::map<std::string, Tensor>& inputs);
// "image: f32[-1, 1, 28, 28], mask: bool[-1, 4]": the inputs a program expects.
std::string describe_inputs(const ir::Program& program);

class Executor {
 public:
  // Runs `program` as it is (no lowering), packing weights into a cache of its own.
  explicit Executor(const ir::Program& program, ExecOptions options = {});
  // Runs a compiled plan's program; packed weights go to the plan. The plan must outlive the executor.
  explicit Executor(ExecPlan& plan, ExecOptions options = {});
  Executor(const Executor&) = delete;  // it points into itself (its own packed-weight cache)
  Executor& operator=(const Executor&) = delete;
  // Inputs by name; checks names, dtypes and shapes against the program (-1 dims accept any extent) and
  // lists what the program expects when they do not fit. Returns the outputs in program order.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);
  // Every value of the last run by name (only with reuse_memory = false; for pd-opt --verify).
  const std::map<std::string, Tensor>& all_values() const { return values_; }
  const ExecStats& stats() const { return stats_; }
  // Turns ExecOptions::time_ops on or off for the following runs (pd-infer --profile's per-op table).
  void set_time_ops(bool on) { options_.time_ops = on; }
  // The weights kernels have packed for this Executor's params (see below).
  const PackedWeights& packed_weights() const { return *packed_; }

 private:
  Executor(const ir::Program& program, PackedWeights* packed, ExecOptions options);
  const ir::Program& program_;
  const std::vector<AnyKernel>* kernels_ = nullptr;  // a plan's, bound once per op
  ExecOptions options_;
  std::vector<const OpSchema*> schemas_;  // per op, bound once
  std::vector<std::shared_ptr<const void>> prepared_;  // per op, its attributes parsed (OpSchema::prepare)
  std::vector<OpMemo> memos_;  // per op, what its kernel kept between runs (inference mode only)
  // Per op, its input slots as the kernel call takes them, kept between runs so that a run does not
  // allocate them again (11 slots for an int8 convolution); emptied after each call.
  std::vector<std::vector<std::vector<Tensor>>> boxed_;
  std::vector<int32_t> last_use_;  // per value: index of the last op reading it (-1: none / output)
  std::map<std::string, Tensor> values_;
  ExecStats stats_;
  // In inference mode the params are declared constant during each run, so kernels may keep packed
  // copies of them here (pd/core/packed_weights.h): an Executor assumes its params are not written in
  // place while it lives.
  PackedWeights own_packed_;
  PackedWeights* packed_;
  std::vector<ir::ValueId> param_ids_;
  std::vector<const Storage*> declared_;  // the param storages last declared constant
  std::vector<const Tensor*> param_tensors_;  // per param_ids_ entry, its tensor in the program (first run)
  // Buffers of run(), kept so that a run allocates none of them: the value slots (the params only, between
  // runs), the storages not counted as intermediates, and the live storages with their value counts.
  std::vector<Tensor> slot_;
  std::vector<const Storage*> external_;
  std::vector<std::pair<const Storage*, int>> live_refs_;
};

}  // namespace pd::exec
