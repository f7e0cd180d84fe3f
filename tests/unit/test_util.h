// Helpers the unit tests share.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "pd/core/error.h"
#include "pd/core/tensor.h"
#include "pd/core/tensor_inl.h"
#include "pd/ir/program.h"

namespace pd::test {

// The message of the pd::Error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The largest |a - b| of two tensors of one shape (REQUIREd), read as f32.
inline float max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.to_vector<float>(), y = b.to_vector<float>();
  float m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// How many ops of `type` a program holds.
inline int count_ops(const ir::Program& p, const std::string& type) {
  return static_cast<int>(std::count_if(p.ops().begin(), p.ops().end(), [&](const ir::Operation& op) { return op.type == type; }));
}

}  // namespace pd::test
