// Reference conv2d (NCHW) and its gradients: im2col / col2im per (batch, group) plus Eigen GEMM. A
// channels_last call runs on NCHW copies of its tensors.
#include <Eigen/Dense>
#include <algorithm>

#include "cpu/common/channel_bias.h"
#include "cpu/common/channels_last.h"
#include "kernels.h"
#include "pd/kernels/spatial_arg.h"

namespace pd::kernels::reference {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct ConvGeom {
  int64_t N, C, H, W;      // input
  int64_t Cout, kH, kW;    // weight
  int64_t oH, oW;          // output
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t cin_g() const { return C / groups; }
  int64_t cout_g() const { return Cout / groups; }
  int64_t col_rows() const { return cin_g() * kH * kW; }
  int64_t col_cols() const { return oH * oW; }
};

ConvGeom make_geom(const Shape& in, const Shape& w, const Shape& o, const std::vector<int64_t>& stride,
                   const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  PD_CHECK(groups > 0, ErrorCode::kInvalidArgument, "conv2d: argument 'groups' must be positive, but received {}",
           groups);
  ConvGeom g{in[0], in[1], in[2], in[3], w[0], w[2], w[3], o[2], o[3],
             spatial_arg(stride, 0, 1), spatial_arg(stride, 1, 1), spatial_arg(padding, 0, 0), spatial_arg(padding, 1, 0),
             spatial_arg(dilation, 0, 1), spatial_arg(dilation, 1, 1), groups};
  return g;
}

// col[(c*kH + i)*kW + j, oh*oW + ow] = x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw] (0 outside).
template <typename T>
void im2col(const T* x, const ConvGeom& g, T* col) {
  const int64_t cols = g.col_cols();
  for (int64_t c = 0; c < g.cin_g(); ++c)
    for (int64_t i = 0; i < g.kH; ++i)
      for (int64_t j = 0; j < g.kW; ++j) {
        T* row = col + ((c * g.kH + i) * g.kW + j) * cols;
        const T* xc = x + c * g.H * g.W;
        for (int64_t oh = 0; oh < g.oH; ++oh) {
          const int64_t h = oh * g.sh - g.ph + i * g.dh;
          for (int64_t ow = 0; ow < g.oW; ++ow) {
            const int64_t w = ow * g.sw - g.pw + j * g.dw;
            row[oh * g.oW + ow] = (h >= 0 && h < g.H && w >= 0 && w < g.W) ? xc[h * g.W + w] : T(0);
          }
        }
      }
}

// The adjoint of im2col: scatter-adds col back into x.
template <typename T>
void col2im(const T* col, const ConvGeom& g, T* x) {
  const int64_t cols = g.col_cols();
  for (int64_t c = 0; c < g.cin_g(); ++c)
    for (int64_t i = 0; i < g.kH; ++i)
      for (int64_t j = 0; j < g.kW; ++j) {
        const T* row = col + ((c * g.kH + i) * g.kW + j) * cols;
        T* xc = x + c * g.H * g.W;
        for (int64_t oh = 0; oh < g.oH; ++oh) {
          const int64_t h = oh * g.sh - g.ph + i * g.dh;
          if (h < 0 || h >= g.H) continue;
          for (int64_t ow = 0; ow < g.oW; ++ow) {
            const int64_t w = ow * g.sw - g.pw + j * g.dw;
            if (w >= 0 && w < g.W) xc[h * g.W + w] += row[oh * g.oW + ow];
          }
        }
      }
}

template <typename T>
void conv2d_nchw(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
                 const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, Tensor& out) {
  const ConvGeom g = make_geom(x.shape(), weight.shape(), out.shape(), stride, padding, dilation, groups);
  const T* xd = x.data<T>();
  const T* wd = weight.data<T>();
  T* od = out.data<T>();
  RowMat<T> col(g.col_rows(), g.col_cols());
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      im2col(xd + (n * g.C + gr * g.cin_g()) * g.H * g.W, g, col.data());
      Eigen::Map<const RowMat<T>> Wg(wd + gr * g.cout_g() * g.col_rows(), g.cout_g(), g.col_rows());
      Eigen::Map<RowMat<T>> Og(od + (n * g.Cout + gr * g.cout_g()) * g.col_cols(), g.cout_g(), g.col_cols());
      Og.noalias() = Wg * col;
    }
  if (bias.defined()) cpu::add_channel_bias<T>(bias.data<T>(), out);
}

template <typename T>
void conv2d_grad_input_nchw(const Tensor& grad, const Tensor& weight, const std::vector<int64_t>& stride,
                            const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, Tensor& dx) {
  const ConvGeom g = make_geom(dx.shape(), weight.shape(), grad.shape(), stride, padding, dilation, groups);
  const T* gd = grad.data<T>();
  const T* wd = weight.data<T>();
  T* xd = dx.data<T>();
  std::fill(xd, xd + dx.numel(), T(0));
  RowMat<T> col(g.col_rows(), g.col_cols());
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      Eigen::Map<const RowMat<T>> Wg(wd + gr * g.cout_g() * g.col_rows(), g.cout_g(), g.col_rows());
      Eigen::Map<const RowMat<T>> Gg(gd + (n * g.Cout + gr * g.cout_g()) * g.col_cols(), g.cout_g(), g.col_cols());
      col.noalias() = Wg.transpose() * Gg;
      col2im(col.data(), g, xd + (n * g.C + gr * g.cin_g()) * g.H * g.W);
    }
}

template <typename T>
void conv2d_grad_weight_nchw(const Tensor& grad, const Tensor& x, const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, Tensor& dw) {
  const ConvGeom g = make_geom(x.shape(), dw.shape(), grad.shape(), stride, padding, dilation, groups);
  const T* gd = grad.data<T>();
  const T* xd = x.data<T>();
  T* wd = dw.data<T>();
  std::fill(wd, wd + dw.numel(), T(0));
  RowMat<T> col(g.col_rows(), g.col_cols());
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      im2col(xd + (n * g.C + gr * g.cin_g()) * g.H * g.W, g, col.data());
      Eigen::Map<const RowMat<T>> Gg(gd + (n * g.Cout + gr * g.cout_g()) * g.col_cols(), g.cout_g(), g.col_cols());
      Eigen::Map<RowMat<T>> Wg(wd + gr * g.cout_g() * g.col_rows(), g.cout_g(), g.col_rows());
      Wg.noalias() += Gg * col.transpose();
    }
}

}  // namespace

template <typename T>
void conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
            const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, bool channels_last,
            Tensor& out) {
  if (!channels_last) return conv2d_nchw<T>(x, weight, bias, stride, padding, dilation, groups, out);
  Tensor plain = Tensor::empty(cpu::nchw_shape_of(out.shape()), out.dtype());
  conv2d_nchw<T>(cpu::nchw_copy<T>(x), weight, bias, stride, padding, dilation, groups, plain);
  cpu::store_nhwc<T>(plain, out);
}

template <typename T>
void conv2d_grad_input(const KernelContext& ctx, const Tensor& grad, const Tensor& weight, const std::vector<int64_t>& input_shape,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& dilation, int64_t groups, bool channels_last, Tensor& dx) {
  if (!channels_last) return conv2d_grad_input_nchw<T>(grad, weight, stride, padding, dilation, groups, dx);
  Tensor plain = Tensor::empty(cpu::nchw_shape_of(dx.shape()), dx.dtype());
  conv2d_grad_input_nchw<T>(cpu::nchw_copy<T>(grad), weight, stride, padding, dilation, groups, plain);
  cpu::store_nhwc<T>(plain, dx);
}

template <typename T>
void conv2d_grad_weight(const KernelContext& ctx, const Tensor& grad, const Tensor& x, const std::vector<int64_t>& weight_shape,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& dilation, int64_t groups, bool channels_last, Tensor& dw) {
  if (!channels_last) return conv2d_grad_weight_nchw<T>(grad, x, stride, padding, dilation, groups, dw);
  conv2d_grad_weight_nchw<T>(cpu::nchw_copy<T>(grad), cpu::nchw_copy<T>(x), stride, padding, dilation, groups, dw);
}

// conv2d_transpose is conv2d's input gradient of x, then the bias on each output channel.
template <typename T>
void conv2d_transpose(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
                      const std::vector<int64_t>& padding, const std::vector<int64_t>& output_padding, const std::vector<int64_t>& dilation,
                      int64_t groups, Tensor& out) {
  if (out.numel() == 0) return;
  conv2d_grad_input_nchw<T>(x, weight, stride, padding, dilation, groups, out);
  if (bias.defined()) cpu::add_channel_bias<T>(bias.data<T>(), out);
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(conv2d, reference, float, double)
PD_INSTANTIATE_KERNELS(conv2d_grad_input, reference, float, double)
PD_INSTANTIATE_KERNELS(conv2d_transpose, reference, float, double)
PD_INSTANTIATE_KERNELS(conv2d_grad_weight, reference, float, double)
