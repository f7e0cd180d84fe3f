// fused_conv2d and fused_linear through oneDNN: the conv / matmul primitive of conv2d and linear with
// the activation as an eltwise post-op, so the output is written once instead of read back by a
// second kernel.
#include "cpu/common/fused_activation.h"
#include "cpu/onednn/conv_geometry.h"
#include "cpu/onednn/matmul_common.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

// `base` with the activation appended as an eltwise post-op (none: no post-op).
dnnl::primitive_attr with_activation(dnnl::primitive_attr attr, cpu::FusedAct act, double alpha) {
  using alg = dnnl::algorithm;
  alg a = alg::eltwise_relu;
  float a_alpha = 0.0f;  // slope of relu's negative side; swish's beta
  switch (act) {
    case cpu::FusedAct::none: return attr;
    case cpu::FusedAct::relu: break;
    case cpu::FusedAct::leaky_relu: a_alpha = static_cast<float>(alpha); break;
    case cpu::FusedAct::gelu: a = alg::eltwise_gelu_erf; break;
    case cpu::FusedAct::silu: a = alg::eltwise_swish, a_alpha = 1.0f; break;
    case cpu::FusedAct::tanh: a = alg::eltwise_tanh; break;
    case cpu::FusedAct::sigmoid: a = alg::eltwise_logistic; break;
  }
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, a, a_alpha, 0.0f);
  attr.set_post_ops(ops);
  return attr;
}

}  // namespace

template <typename T>
void fused_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                  const std::string& activation, double alpha, Tensor& out) {
  const auto act = cpu::parse_fused_activation("fused_conv2d", activation);
  if (out.numel() == 0) return;
  guarded("fused_conv2d", [&] {
    ConvGeometry g(x.shape(), weight.shape(), out.shape(), stride, padding, dilation, groups);
    const std::string key = fmt::format("{}:{}:{}", g.key("fused_conv2d", bias.defined()), activation, alpha);
    conv_forward(g, key, with_activation(user_scratchpad(), act, alpha), x, weight, bias, out);
  });
}

template <typename T>
void fused_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::string& activation,
                  double alpha, Tensor& out) {
  const auto act = cpu::parse_fused_activation("fused_linear", activation);
  if (out.numel() == 0) return;
  // An empty inner dimension leaves only the bias, which oneDNN would not write: the reference handles it.
  if (weight.shape()[1] == 0) return reference::fused_linear<float>(x, weight, bias, activation, alpha, out);
  guarded("fused_linear", [&] {
    const int64_t out_f = weight.shape()[0];
    const std::string key = fmt::format("fused_linear:{}:{}:{}:{}:{}:{}", out.numel() / out_f, weight.shape()[1], out_f,
                                        bias.defined(), activation, alpha);
    linear_forward(key, with_activation(dnnl::primitive_attr(), act, alpha), x, weight, bias, out);
  });
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(fused_conv2d, onednn, float)
PD_INSTANTIATE_KERNELS(fused_linear, onednn, float)
