// The extents of a 2-D pooling call (max_pool2d, avg_pool2d and their gradients), shared by the CPU and
// CUDA kernels; a plain struct, so a CUDA kernel takes it by value.
#pragma once
#include <cstdint>
#include <vector>

#include "pd/core/shape.h"
#include "pd/kernels/spatial_arg.h"

namespace pd::kernels {

struct PoolGeom {
  int64_t planes, H, W, oH, oW, kh, kw, sh, sw, ph, pw;
};

// `in` is [N, C, H, W]; `o` the output (or incoming grad) shape. stride [] means stride = kernel.
inline PoolGeom make_pool_geom(const Shape& in, const Shape& o, const std::vector<int64_t>& kernel_size,
                               const std::vector<int64_t>& stride, const std::vector<int64_t>& padding) {
  PoolGeom g{};
  g.planes = in[0] * in[1];
  g.H = in[2];
  g.W = in[3];
  g.oH = o[2];
  g.oW = o[3];
  g.kh = spatial_arg(kernel_size, 0, 1);
  g.kw = spatial_arg(kernel_size, 1, 1);
  g.sh = spatial_arg(stride, 0, g.kh);
  g.sw = spatial_arg(stride, 1, g.kw);
  g.ph = spatial_arg(padding, 0, 0);
  g.pw = spatial_arg(padding, 1, 0);
  return g;
}

}  // namespace pd::kernels
