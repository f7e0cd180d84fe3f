// The post-ops of oneDNN's fused kernels (fused_conv2d, fused_linear, blocked_conv2d): a residual and an
// activation applied as the primitive writes its output, so that no second kernel reads it back.
#pragma once
#include <utility>

#include "cpu/onednn/onednn_common.h"
#include "elementwise_ops.h"

namespace pd::kernels::onednn {

// How a residual joins the output: a sum post-op (the conv puts it in its blocked destination first)
// or a binary add post-op that reads it where it is (the matmul's plain rows: no copy), as post-op 0.
struct ResidualPostOp {
  bool sum = false;
  const dnnl::memory::desc* add = nullptr;
};

// `base` with the residual's post-op and the activation's, and whether the activation is left to
// apply_after: oneDNN has no exact form of some (relu6's clip makes NaN 0), so the primitive still runs
// (with the residual) and the activation's formula goes over its output in one more pass.
std::pair<dnnl::primitive_attr, bool> with_activation(dnnl::primitive_attr base, ResidualPostOp residual, Activation act,
                                                      double alpha);
void apply_after(Tensor& out, Activation act, double alpha);

}  // namespace pd::kernels::onednn
