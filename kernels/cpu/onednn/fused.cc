// fused_conv2d and fused_linear through oneDNN: the conv / matmul primitive of conv2d and linear with
// the residual as a sum (conv) or binary add (matmul) post-op and the activation as an eltwise post-op,
// so the output is written once instead of read back by more kernels. fused_linear's residual and GELU
// go to the vector epilogue of small_linear.h instead where there is one, and small products to its GEMM.
#include "cpu/onednn/conv_geometry.h"
#include "cpu/onednn/matmul_common.h"
#include "cpu/onednn/post_ops.h"
#include "cpu/ref/small_linear.h"
#include "kernels.h"

namespace pd::kernels::onednn {

template <typename T>
void fused_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                  Tensor& out) {
  const Activation act = parse_activation("fused_conv2d", activation);
  if (out.numel() == 0) return;
  if (!residual.defined() && use_direct_conv(x, weight, stride, padding, dilation, groups))
    return direct_conv(ctx, x, weight, bias, stride, padding, dilation, groups, activation, alpha, out);
  const auto [attr, after] = with_activation(user_scratchpad(), {residual.defined(), nullptr}, act, alpha);
  const dnnl::primitive_attr& post = attr;
  guarded("fused_conv2d", [&] {
    ConvGeometry g(x.shape(), weight.shape(), out.shape(), stride, padding, dilation, groups);
    const std::string key =
        fmt::format("{}:{}:{}:{}", g.key("fused_conv2d", bias.defined()), residual.defined(), activation, alpha);
    conv_forward(ctx, g, key, post, x, weight, bias, out, residual);
  });
  if (after) apply_after(out, act, alpha);
}

template <typename T>
void fused_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  const std::string& activation, double alpha, Tensor& out) {
  const Activation act = parse_activation("fused_linear", activation);
  if (out.numel() == 0) return;
  // An empty inner dimension leaves only the bias, which oneDNN would not write; a single row is faster
  // as the reference's matrix-vector product (see single_row). Both are decided before building the
  // post-ops, which costs a microsecond a call.
  if (weight.shape()[1] == 0 || single_row(weight, out))
    return reference::fused_linear<float>(ctx, x, weight, bias, residual, activation, alpha, out);
  if (reference::small_linear(ctx, x, weight, bias, residual, act, out)) return;
  const int64_t out_f = weight.shape()[0];
  const int64_t m = out.numel() / out_f;
  // A residual or gelu goes to the vector epilogue after the plain matmul where there is one (cheaper
  // than oneDNN's post-ops for them); relu stays a post-op (free).
  if ((residual.defined() || act == Activation::gelu) && reference::linear_epilogue_runs(act)) {
    guarded("fused_linear", [&] {
      linear_forward(fmt::format("linear:{}:{}:{}:{}", m, weight.shape()[1], out_f, bias.defined()), dnnl::primitive_attr(), x,
                     weight, bias, out);
    });
    reference::linear_epilogue(residual, act, out);
    return;
  }
  const dnnl::memory::desc rows = plain_desc(dims{m, out_f});
  const auto [attr, after] = with_activation(dnnl::primitive_attr(), {false, residual.defined() ? &rows : nullptr}, act, alpha);
  const dnnl::primitive_attr& post = attr;
  guarded("fused_linear", [&] {
    const std::string key = fmt::format("fused_linear:{}:{}:{}:{}:{}:{}:{}", m, weight.shape()[1], out_f, bias.defined(),
                                        residual.defined(), activation, alpha);
    linear_forward(key, post, x, weight, bias, out, residual);
  });
  if (after) apply_after(out, act, alpha);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(fused_conv2d, onednn, float)
PD_INSTANTIATE_KERNELS(fused_linear, onednn, float)
