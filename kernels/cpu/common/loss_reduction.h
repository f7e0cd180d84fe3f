// The reduction attribute of the losses: "mean" (over the counted elements), "sum" or "none".
#pragma once
#include <string>

#include "pd/core/error.h"

namespace pd::kernels::cpu {

enum class Reduction { kMean, kSum, kNone };

inline Reduction parse_reduction(const std::string& r, const char* op) {
  if (r == "mean") return Reduction::kMean;
  if (r == "sum") return Reduction::kSum;
  if (r == "none") return Reduction::kNone;
  raise(ErrorCode::kInvalidArgument, "{}: argument 'reduction' must be one of mean, sum, none, but received '{}'", op, r);
}

}  // namespace pd::kernels::cpu
