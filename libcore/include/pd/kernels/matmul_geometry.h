// How matmul kernels (reference, CUDA) read their operands: the trailing matrix of each shape, with a
// 1-D operand as a single row (x side) or a single column (y side), and the batch dims in front.
#pragma once
#include "pd/core/shape.h"

namespace pd::kernels {

struct MatView {
  Shape batch;
  int64_t rows = 1, cols = 1;
};

// The squeezed dim of a 1-D operand does not change memory order.
inline MatView split_matrix(const Shape& s, bool is_x) {
  MatView v;
  if (s.size() == 1) {
    if (is_x) v.cols = s[0]; else v.rows = s[0];
  } else if (s.size() >= 2) {
    v.batch.assign(s.begin(), s.end() - 2);
    v.rows = s[s.size() - 2];
    v.cols = s[s.size() - 1];
  }
  return v;
}

}  // namespace pd::kernels
