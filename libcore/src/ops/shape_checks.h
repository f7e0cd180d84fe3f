// Argument checks the shape-rule files share (shape_rules.cc, upsampling_shape_rules.cc).
#pragma once
#include <cstdint>
#include <vector>

#include "pd/core/error.h"
#include "pd/ops/shape_rules.h"

namespace pd::infer {

inline void check_rank(const char* op, In t, int64_t rank, const char* layout) {
  PD_CHECK(t.t.dim() == rank, ErrorCode::kShape, "{}: argument '{}' must be {}-D {}, but received shape {}", op, t.name,
           rank, layout, shape_str(t.t.shape()));
}

// Window attributes (kernel, stride, padding, dilation) are at most 2^31, so that the output-size
// arithmetic on them and on extents (at most kMaxNumel = 2^40) cannot overflow int64.
constexpr int64_t kMaxWindowAttr = int64_t{1} << 31;

inline void check_pair(const char* op, const char* name, const std::vector<int64_t>& v, int64_t min) {
  PD_CHECK(v.size() == 2 && v[0] >= min && v[1] >= min && v[0] <= kMaxWindowAttr && v[1] <= kMaxWindowAttr,
           ErrorCode::kInvalidArgument, "{}: argument '{}' must be 2 integers in [{}, 2^31], but received {}", op, name,
           min, shape_str(v));
}

}  // namespace pd::infer
