// fused_conv2d and fused_linear: the reference conv / linear kernel, then the residual added and the
// activation applied in place with its op's formula (elementwise, so reading and writing `out` is safe).
#include "cpu/common/elementwise.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

template <typename T>
void apply_activation(Activation act, double alpha, Tensor& out) {
  dispatch_activation(act, [&](auto a) {
    constexpr Activation A = decltype(a)::value;
    if constexpr (A != Activation::none)
      cpu::unary_map<T>(out, out, [al = static_cast<T>(alpha)](T v) { return activate<A>(v, al); });
  });
}

}  // namespace

template <typename T>
void fused_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                  Tensor& out) {
  const auto act = parse_activation("fused_conv2d", activation);  // before any work
  conv2d<T>(ctx, x, weight, bias, stride, padding, dilation, groups, false, out);
  if (residual.defined()) add<T>(ctx, out, residual, out);  // same shape: elementwise in place
  apply_activation<T>(act, alpha, out);
}

template <typename T>
void fused_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  const std::string& activation, double alpha, Tensor& out) {
  const auto act = parse_activation("fused_linear", activation);
  linear<T>(ctx, x, weight, bias, out);
  if (residual.defined()) add<T>(ctx, out, residual, out);
  apply_activation<T>(act, alpha, out);
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(fused_conv2d, reference, float, double)
PD_INSTANTIATE_KERNELS(fused_linear, reference, float, double)
