// nll_loss's view of its input, shared by the reference and CUDA kernels: x as [outer, C, inner] with
// the classes on axis 1, or on axis 0 of a single sample.
#pragma once
#include <cstdint>

#include "pd/core/tensor.h"

namespace pd::kernels::cpu {

struct NllView {
  int64_t outer = 1, C = 1, inner = 1;
};

inline NllView nll_view(const Tensor& x) {
  NllView v;
  const Shape& s = x.shape();
  const size_t ca = s.size() == 1 ? 0 : 1;
  for (size_t d = 0; d < ca; ++d) v.outer *= s[d];
  v.C = s[ca];
  for (size_t d = ca + 1; d < s.size(); ++d) v.inner *= s[d];
  return v;
}

}  // namespace pd::kernels::cpu
