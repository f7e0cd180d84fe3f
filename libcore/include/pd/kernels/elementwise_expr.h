// The expression language of fused_elementwise: one nested call per elementwise op, over the op's
// inputs x0, x1, ... and numeric constants for the ops' float attributes, e.g.
//
//   relu(add(x0, x1))            leaky_relu(mul(x0, x1), 0.2)            clip(x0, 0, 6)
//
// parse() checks names, arities, input numbers, that every input is used and that clip's min <= max,
// and compiles the text to steps in evaluation order (post-order), which is what the kernels run;
// format() writes the text back.
#pragma once
#include <string>
#include <vector>

#include "elementwise_ops.h"

namespace pd::ewise {

// Every elementwise op the language knows: the ops of ops.yaml with a scalar formula, in the generated
// table (elementwise_ops.h), which names their tensor operands and float constants.
using Fn = EwiseFn;

struct FnInfo {
  const char* name;
  int tensors;                       // tensor operands (1 or 2)
  std::vector<const char*> consts;   // the op's float attributes, in argument order
};
const FnInfo& info(Fn fn);
// The Fn named `name`, or false when the language has no such op.
bool find_fn(const std::string& name, Fn* fn);

// One step: fn over registers (inputs are registers 0..num_inputs-1, step k writes num_inputs + k).
struct Step {
  Fn fn;
  std::vector<int> args;
  std::vector<double> consts;
};

struct Program {
  int num_inputs = 0;
  std::vector<Step> steps;  // the last step's register is the result
  int num_registers() const { return num_inputs + static_cast<int>(steps.size()); }
};

// Throws pd::Error (kInvalidArgument) naming `op`, the position in `text` and what was expected.
Program parse(const char* op, const std::string& text, int num_inputs);

// The text of a call, for building expressions: call(relu, {"add(x0, x1)"}, {}) -> "relu(add(x0, x1))".
std::string call(Fn fn, const std::vector<std::string>& operands, const std::vector<double>& consts);
// "x3"
std::string input(int index);

}  // namespace pd::ewise
