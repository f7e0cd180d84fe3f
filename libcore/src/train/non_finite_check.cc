#include "non_finite_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace pd::train {

std::string first_non_finite(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype()) || t.numel() == 0) return "";
  const std::vector<double> v = t.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isfinite(v[i])) continue;
    // The flat index as a coordinate, which is what a user can look up.
    Shape at(t.shape().size());
    int64_t rest = static_cast<int64_t>(i);
    for (size_t d = at.size(); d-- > 0;) {
      at[d] = rest % t.shape()[d];
      rest /= t.shape()[d];
    }
    return fmt::format("{} at [{}]", std::isnan(v[i]) ? "nan" : v[i] > 0 ? "inf" : "-inf", fmt::join(at, ", "));
  }
  return "";
}

void NonFiniteCheck::record(const char* op, const BoxedInputs& inputs, const AttrMap&, const std::vector<Tensor>& outputs) {
  ScopedOpObserver quiet(nullptr);  // the checks below must not observe themselves
  for (size_t o = 0; o < outputs.size(); ++o) {
    const std::string bad = first_non_finite(outputs[o]);
    if (bad.empty()) continue;
    // An op fed a NaN passes it on; only the op that made one from finite inputs is to blame, and the
    // inputs' own producers were checked before it. What is left is data or parameters.
    for (const auto& group : inputs)
      for (size_t i = 0; i < group.size(); ++i)
        if (const std::string in = first_non_finite(group[i]); !in.empty())
          raise(ErrorCode::kInvalidArgument,
                "{}: op '{}' received a non-finite input ({}, shape {}), which no checked op produced: the batch or a "
                "parameter already held it",
                where_, op, in, shape_str(group[i].shape()));
    raise(ErrorCode::kInvalidArgument, "{}: op '{}' produced a non-finite value from finite inputs: output {} (shape {}) has {}",
          where_, op, o, shape_str(outputs[o].shape()), bad);
  }
}

}  // namespace pd::train
