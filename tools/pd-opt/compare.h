// pd-opt --verify: run the original and the optimised program on the same random inputs and compare.
#pragma once
#include <string>

#include "pd/ir/program.h"

namespace pd::tools {

struct VerifyResult {
  bool ok = true;
  std::string message;  // the first diverging output, or a summary of the match
};

// Inputs are random values of the declared shapes with every -1 extent set to `batch` (floats in
// [-1, 1], integers 0, bools false, so that index inputs stay in range).
VerifyResult compare_programs(const ir::Program& before, const ir::Program& after, double rtol, double atol,
                              int64_t batch = 2, int64_t seed = 0);

}  // namespace pd::tools
