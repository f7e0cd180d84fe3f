// Graph passes over a Program and the PassManager that runs them by name or optimisation level.
//
//   pd::ir::PassOptions opt;
//   opt.level = 2;                                  // O0 none; O1 dce identity cse; O2 + folding, fusions
//   opt.disable = {"cse"};
//   std::vector<pd::ir::PassStats> report = pd::ir::PassManager(opt).run(program);
//   std::cout << pd::ir::format_report(report);
//
// A pass is a small class: the op types it looks at (a cheap filter), match() checking the cheapest
// preconditions first and changing nothing, and rewrite() doing the change. The default run() drives
// them over the ops until nothing matches; passes with a whole-graph algorithm override run().
//
// Two stages (docs/architecture.md). Portable passes (dce, cse, constant_fold, identity_elim, bn_fold)
// keep a program runnable anywhere; pd-opt's levels run them and save the result. Lowering passes
// rewrite into ops chosen for a pd::Target (fused kernels, Winograd weights) and say which targets
// they support; exec::compile runs them when a model is loaded, and a program they changed is marked
// with the target (Program::target()) so that it is refused on machines that cannot run it.
#pragma once
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "pd/core/target.h"
#include "pd/ir/program.h"

namespace pd::ir {

struct PassStats {
  std::string pass;
  int64_t ops_before = 0, ops_after = 0;
  int64_t removed = 0;   // ops deleted outright (dead, duplicate, identity)
  int64_t fused = 0;     // ops merged into another op (bn into conv, activation into fused_conv2d)
  int64_t folded = 0;    // ops computed at optimisation time and replaced by params
  int64_t rewrites = 0;  // matches rewritten
  double ms = 0;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual std::string doc() const = 0;
  // Op types worth calling match() on; empty means every op.
  virtual std::vector<std::string> targets() const { return {}; }
  // Whether the op at `op` can be rewritten. Must not change the program.
  virtual bool match(const Program& p, int32_t op) const = 0;
  // Rewrites a matched op. May insert and remove ops; ids stay valid until compact().
  virtual void rewrite(Program& p, int32_t op, PassStats& stats) const = 0;
  // Applies rewrites until no op matches, then compacts the program.
  virtual void run(Program& p, PassStats& stats) const;
  // A lowering pass rewrites for a target (see above); a portable one does not.
  virtual bool lowering() const { return false; }
  // Whether the pass may run for `target` (a lowering pass that only pays off with some kernels says
  // so here instead of probing the machine it runs on).
  virtual bool supports(const Target& target) const { return true; }
  // Called with the target before run(), for a lowering pass whose rewrite depends on it (the width of
  // channel blocks); most passes decide in supports() alone.
  virtual void set_target(const Target& target) {}
  // The batch the program is expected to run at (pd-infer's --batch; 1, the latency case, when not
  // known): a lowering pass may choose by it what runs faster, never what is computed.
  virtual void set_batch_hint(int64_t batch) {}
};

// Every pass by name ("dce", "cse", ...), in the order levels use them.
std::vector<std::string> pass_names();
// Throws pd::Error listing the valid names.
std::unique_ptr<Pass> make_pass(const std::string& name);
// The portable passes of -O0 .. -O3.
std::vector<std::string> level_passes(int level);
// The lowering passes, in the order exec::compile runs them (dce last, to sweep what they orphan).
std::vector<std::string> lowering_passes();

struct PassOptions {
  int level = 2;
  std::vector<std::string> passes;   // when non-empty, exactly these in this order (level ignored)
  std::vector<std::string> disable;  // removed from the list
  bool lower = false;                // append lowering_passes() to the level's (ignored with `passes`)
  Target target = Target::host();    // what lowering passes rewrite for; passes not supporting it are skipped
  int64_t batch_hint = 1;            // the batch it will mostly run at (Pass::set_batch_hint)
  bool verify_each = true;           // run verify() after every pass (a pass bug becomes an error naming it)
  std::ostream* print_after = nullptr;  // when set, the text form after every pass goes here
};

class PassManager {
 public:
  // Resolves the pass list; throws pd::Error for unknown names (in passes or disable) or a bad level.
  explicit PassManager(const PassOptions& options);
  // The passes that will run, and those left out because they do not support the target.
  const std::vector<std::string>& pipeline() const { return names_; }
  const std::vector<std::string>& skipped() const { return skipped_; }
  // Runs the pipeline. When a lowering pass changed the program, marks it with the target; throws
  // pd::Error if the program was already lowered for another target.
  std::vector<PassStats> run(Program& p) const;

 private:
  PassOptions options_;
  std::vector<std::string> names_, skipped_;
};

// A table: pass, ops before/after, removed, fused, folded, time; and a total line.
std::string format_report(const std::vector<PassStats>& stats);

// Whether constant_fold would fold op `op`: every input a param, not random, not a training batch_norm, not
// the dequantize_linear of a QDQ weight.
bool foldable(const Program& p, int32_t op);
// Runs op `op` now on its inputs, which must all be params, and replaces its results by new params (what
// constant_fold does; importers fold shape computations with it). Returns the new params, in result order.
std::vector<ValueId> fold_op(Program& p, int32_t op);
// Which operand (0 or 1) of `add` op `op` conv_residual_fuse folds in as the convolution, the other
// becoming that convolution's residual; -1 when it would not fuse the add. pd-quant quantizes the
// residual operand so that the int8 convolution reads it in int8.
int residual_conv_operand(const Program& p, int32_t op);

// Helpers passes share.
bool is_param(const Program& p, ValueId v);
// How many tensor input slots an op of this type has (its schema's tensor arguments).
size_t tensor_slots(const std::string& op_type);
// The value in input slot `slot` of op (kNoValue for an empty optional).
ValueId input_of(const Program& p, int32_t op, size_t slot);
// Attribute `name` of `op` or the schema default, as T (bool/int/float/str/int[]/float[] attributes).
bool attr_bool(const Operation& op, const std::string& name);
double attr_float(const Operation& op, const std::string& name);
std::string attr_string(const Operation& op, const std::string& name);
int64_t attr_int(const Operation& op, const std::string& name);
std::vector<int64_t> attr_ints(const Operation& op, const std::string& name);
std::vector<double> attr_floats(const Operation& op, const std::string& name);
// A conv2d or batch_norm on channels_last (NHWC) tensors, as pd-train runs them. The fusions and
// lowerings are written for NCHW: Pass::run does not offer them to a pass that targets their type, and
// a pass that reaches one as another op's producer leaves it alone.
bool channels_last_op(const Operation& op);

}  // namespace pd::ir
