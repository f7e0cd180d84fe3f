// View functions for the ops.yaml entries marked `view:`: the result shares storage with the input
// (reshape copies only when the input's strides make a view impossible).
#pragma once
#include "pd/ops/shape_rules.h"

namespace pd::views {

Tensor reshape(const char* op, In x, const std::vector<int64_t>& shape);
Tensor transpose(const char* op, In x, const std::vector<int64_t>& perm);
Tensor flatten(const char* op, In x, int64_t start_axis, int64_t stop_axis);
Tensor squeeze(const char* op, In x, const std::vector<int64_t>& axis);
Tensor unsqueeze(const char* op, In x, const std::vector<int64_t>& axis);
Tensor expand(const char* op, In x, const std::vector<int64_t>& shape);
Tensor slice(const char* op, In x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
             const std::vector<int64_t>& ends, const std::vector<int64_t>& steps);
Tensor broadcast_reduced(const char* op, In x, const std::vector<int64_t>& shape, const std::vector<int64_t>& axis,
                         bool keepdim);

}  // namespace pd::views
