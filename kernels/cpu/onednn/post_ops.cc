// The post-op helpers of post_ops.h.
#include "cpu/onednn/post_ops.h"

#include <optional>

#include "cpu/common/elementwise.h"

namespace pd::kernels::onednn {
namespace {

// `base` with post-ops: the residual's, then the activation as an eltwise post-op (none: no eltwise).
// Nothing for an activation oneDNN has no exact form of (relu6: its clip makes NaN 0): see with_activation.
std::optional<dnnl::primitive_attr> with_post_ops(dnnl::primitive_attr attr, ResidualPostOp residual, Activation act,
                                                  double alpha) {
  using alg = dnnl::algorithm;
  dnnl::post_ops ops;
  if (residual.sum) ops.append_sum(1.0f);
  if (residual.add) ops.append_binary(alg::binary_add, *residual.add);
  alg a = alg::eltwise_relu;
  float a_alpha = 0.0f;  // slope of relu's negative side; swish's beta
  switch (act) {
    case Activation::none:
      if (ops.len() > 0) attr.set_post_ops(ops);
      return attr;
    case Activation::leaky_relu:
      if (alpha != 0.0) {
        a_alpha = static_cast<float>(alpha);
        break;
      }
      [[fallthrough]];  // slope 0 is relu, which oneDNN would run on its NaN-dropping path
    case Activation::relu:
      // oneDNN's relu with slope 0 (and its clip) turns NaN into 0. elu with alpha 0 is x > 0 ? x : -0 and
      // keeps NaN, and adding 0 makes -0 into +0: relu exactly as the reference kernels compute it.
      ops.append_eltwise(1.0f, alg::eltwise_elu, 0.0f, 0.0f);
      ops.append_eltwise(1.0f, alg::eltwise_linear, 1.0f, 0.0f);
      attr.set_post_ops(ops);
      return attr;
    case Activation::gelu: a = alg::eltwise_gelu_erf; break;
    case Activation::gelu_tanh: a = alg::eltwise_gelu_tanh; break;
    case Activation::silu: a = alg::eltwise_swish, a_alpha = 1.0f; break;
    case Activation::tanh: a = alg::eltwise_tanh; break;
    case Activation::sigmoid: a = alg::eltwise_logistic; break;
    // x * relu6(x + 3) / 6 (alpha and beta unused in oneDNN 2.6): MobileNetV3's, whose stem ran the
    // activation as a separate scalar pass, 100 of its 200 us.
    case Activation::hardswish: a = alg::eltwise_hardswish; break;
    default: return std::nullopt;
  }
  ops.append_eltwise(1.0f, a, a_alpha, 0.0f);
  attr.set_post_ops(ops);
  return attr;
}

}  // namespace

std::pair<dnnl::primitive_attr, bool> with_activation(dnnl::primitive_attr base, ResidualPostOp residual, Activation act,
                                                      double alpha) {
  if (auto attr = with_post_ops(base, residual, act, alpha)) return {*attr, false};
  return {*with_post_ops(base, residual, Activation::none, alpha), true};
}

void apply_after(Tensor& out, Activation act, double alpha) {
  dispatch_activation(act, [&](auto a) {
    constexpr Activation A = decltype(a)::value;
    const float al = static_cast<float>(alpha);
    cpu::unary_map<float>(out, out, [=](float v) { return activate<A, float>(v, al); });
  });
}

}  // namespace pd::kernels::onednn
