// Reference batch_norm (and batch_norm_add_relu) and layer_norm with their gradients. Statistics
// accumulate in double (a channels-last chunk's floats in float first: bn_rows.h). batch_norm on
// channels_last data walks rows of C channels (bn_rows.h) in fixed chunks of rows, whose partial sums
// are added in chunk order, so that the result does not depend on the thread count either.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/bn_rows.h"
#include "cpu/ref/sum_run.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

// x viewed as [N, C, inner] with channels on axis 1.
struct ChannelView {
  int64_t N, C, inner;
};

ChannelView channel_view(const Shape& s) {
  ChannelView v{s.empty() ? 1 : s[0], s.size() < 2 ? 1 : s[1], 1};
  for (size_t i = 2; i < s.size(); ++i) v.inner *= s[i];
  return v;
}

// x viewed as [outer, inner] where inner spans the normalised axes.
void norm_split(const Shape& s, int64_t begin_norm_axis, int64_t& outer, int64_t& inner) {
  const int64_t nd = static_cast<int64_t>(s.size());
  const int64_t begin = nd == 0 ? 0 : normalize_axis(begin_norm_axis, nd, "layer_norm: argument 'begin_norm_axis'");
  outer = 1;
  inner = 1;
  for (int64_t i = 0; i < nd; ++i) (i < begin ? outer : inner) *= s[i];
}

// The loops of sum_run.h, in the widest vector code the CPU has for floats.
template <typename T>
void shifted_sums_of(const T* x, int64_t n, double shift, double* sum, double* sum_sq) {
  if constexpr (std::is_same_v<T, float>) shifted_sums_run_widest(x, n, shift, sum, sum_sq);
  else shifted_sums_run<T>(x, n, shift, sum, sum_sq);
}
template <typename T>
void affine_of(const T* x, int64_t n, BnAffine<T> a, T* y) {
  if constexpr (std::is_same_v<T, float>) affine_run_widest(x, n, a, y);
  else affine_run<T>(x, n, a, y);
}
template <typename T>
void grad_sums_of(const T* g, const T* x, int64_t n, T mean, BnAffine<T> a, double* sum_g, double* sum_gd) {
  if constexpr (std::is_same_v<T, float>) grad_sums_run_widest(g, x, n, mean, a, sum_g, sum_gd);
  else grad_sums_run<T>(g, x, n, mean, a, sum_g, sum_gd);
}
template <typename T>
void bn_dx_of(const T* g, const T* x, int64_t n, T ka, T kx, T mean, T k0, BnAffine<T> a, T* dx) {
  if constexpr (std::is_same_v<T, float>) bn_dx_run_widest(g, x, n, ka, kx, mean, k0, a, dx);
  else bn_dx_run<T>(g, x, n, ka, kx, mean, k0, a, dx);
}

template <typename T>
void bn_stats_rows_of(const T* x, int64_t rows, int64_t C, const double* shift, double* sum, double* sum_sq) {
  if constexpr (std::is_same_v<T, float>) bn_stats_rows_widest(x, rows, C, shift, sum, sum_sq);
  else bn_stats_rows<T>(x, rows, C, shift, sum, sum_sq);
}
template <typename T>
void bn_affine_rows_of(const T* x, int64_t rows, int64_t C, const BnRowConsts<T>& k, T* y) {
  if constexpr (std::is_same_v<T, float>) bn_affine_rows_widest(x, rows, C, k, y);
  else bn_affine_rows<T>(x, rows, C, k, y);
}
template <typename T>
void bn_grad_sums_rows_of(const T* g, const T* x, int64_t rows, int64_t C, const BnRowConsts<T>& k, double* sum_g, double* sum_gd) {
  if constexpr (std::is_same_v<T, float>) bn_grad_sums_rows_widest(g, x, rows, C, k, sum_g, sum_gd);
  else bn_grad_sums_rows<T>(g, x, rows, C, k, sum_g, sum_gd);
}
template <typename T>
void bn_dx_rows_of(const T* g, const T* x, int64_t rows, int64_t C, const BnRowConsts<T>& k, T* dx) {
  if constexpr (std::is_same_v<T, float>) bn_dx_rows_widest(g, x, rows, C, k, dx);
  else bn_dx_rows<T>(g, x, rows, C, k, dx);
}
template <typename T>
void bn_add_relu_rows_of(const T* x, const T* r, int64_t rows, int64_t C, const BnRowConsts<T>& k, T* y) {
  if constexpr (std::is_same_v<T, float>) bn_add_relu_rows_widest(x, r, rows, C, k, y);
  else bn_add_relu_rows<T>(x, r, rows, C, k, y);
}
template <typename T>
void bn_masked_grad_sums_rows_of(const T* g, const T* out, const T* x, int64_t rows, int64_t C, const T* mean, T* gm, double* sum_g,
                                 double* sum_gd) {
  if constexpr (std::is_same_v<T, float>) bn_masked_grad_sums_rows_widest(g, out, x, rows, C, mean, gm, sum_g, sum_gd);
  else bn_masked_grad_sums_rows<T>(g, out, x, rows, C, mean, gm, sum_g, sum_gd);
}

// Channel c's out = (x - mean) * invstd * scale + bias as one multiply-add, the constants made in
// double from the saved (rounded) statistics: batch_norm and batch_norm_grad both make them here, so
// that a fused relu's mask in the gradient is the forward's.
template <typename T>
BnAffine<T> bn_affine(T mean, T invstd, const T* scale, const T* bias, int64_t c, bool relu) {
  const double k = static_cast<double>(invstd) * (scale ? static_cast<double>(scale[c]) : 1.0);
  return {static_cast<T>(k), static_cast<T>((bias ? static_cast<double>(bias[c]) : 0.0) - static_cast<double>(mean) * k), relu};
}

// Channel c's saved statistics (mean, 1 / sqrt(var + epsilon)), in training from the sums of x - shift
// and of their squares over its n values, also folded into the running ones (with the unbiased
// variance); in eval the running ones. Both layouts make them here.
template <typename T>
void channel_statistics(int64_t c, bool training, int64_t n, double shift, double sum, double sum_sq, double momentum,
                        double epsilon, T* rm, T* rv, T* sm, T* si) {
  double mean = 0, var = 0;  // training with no elements: nothing to normalise or to fold into the running ones
  if (training && n > 0) {
    const double sq = std::max(0.0, sum_sq - sum * sum / static_cast<double>(n));  // sum of (x - mean)^2
    mean = shift + sum / static_cast<double>(n);
    var = sq / static_cast<double>(n);
    const double unbiased = n > 1 ? sq / static_cast<double>(n - 1) : var;
    rm[c] = static_cast<T>(momentum * rm[c] + (1 - momentum) * mean);
    rv[c] = static_cast<T>(momentum * rv[c] + (1 - momentum) * unbiased);
  } else if (!training) {
    mean = rm[c], var = rv[c];
  }
  sm[c] = static_cast<T>(mean);
  si[c] = static_cast<T>(1.0 / std::sqrt(var + epsilon));
}

// Channel c's gradient constants from its sums of g' (sum_g) and g' * (x - mean) (sum_gd) over n values:
// dscale and dbias, and dx = ka * g' + kx * (x - mean) + k0. Training: dx = a * (g' - sum(g')/n - xhat *
// sum(g' xhat)/n), a = scale * invstd, xhat = (x - mean) * invstd (batch statistics depend on x); eval:
// dx = a * g'. g' is zero where a fused relu clipped. Both layouts make them here.
template <typename T>
struct BnGradConsts {
  T dscale, dbias, ka, kx, k0;
};
template <typename T>
BnGradConsts<T> grad_constants(const T* scale, int64_t c, double invstd, double sum_g, double sum_gd, int64_t n, bool training) {
  const double sum_gx = sum_gd * invstd;
  const double a = (scale ? static_cast<double>(scale[c]) : 1.0) * invstd;
  const double nn = n > 0 ? static_cast<double>(n) : 1.0;
  return {static_cast<T>(sum_gx), static_cast<T>(sum_g), static_cast<T>(a),
          training ? static_cast<T>(-a * invstd * sum_gx / nn) : T(0), training ? static_cast<T>(-a * sum_g / nn) : T(0)};
}

// Rows of a channels-last tensor per chunk of work (see the file's comment).
constexpr int64_t kBnRowChunk = 256;

// f(chunk, first row, row count) for every chunk of `rows`, chunks across threads.
template <typename F>
void for_row_chunks(int64_t rows, int64_t C, F&& f) {
  const int64_t chunks = (rows + kBnRowChunk - 1) / kBnRowChunk;
  cpu::parallel_for(chunks, 3 * kBnRowChunk * C, [&](int64_t k) {
    const int64_t r0 = k * kBnRowChunk;
    f(k, r0, std::min(kBnRowChunk, rows - r0));
  });
}

// Two per-channel sums over all rows: each chunk's into its own slot, then the slots in order.
template <typename F>
void channel_sums(int64_t rows, int64_t C, std::vector<double>& a, std::vector<double>& b, F&& sums_of_rows) {
  const int64_t chunks = (rows + kBnRowChunk - 1) / kBnRowChunk;
  std::vector<double> part(static_cast<size_t>(chunks * 2 * C), 0.0);
  for_row_chunks(rows, C, [&](int64_t k, int64_t r0, int64_t n) { sums_of_rows(r0, n, &part[k * 2 * C], &part[(k * 2 + 1) * C]); });
  a.assign(C, 0.0), b.assign(C, 0.0);
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t c = 0; c < C; ++c) a[c] += part[k * 2 * C + c], b[c] += part[(k * 2 + 1) * C + c];
}

// batch_norm over [rows, C]; with a residual rd, batch_norm_add_relu.
template <typename T>
void batch_norm_channels_last(const Tensor& x, const T* rd, const T* sc, const T* bs, T* rm, T* rv, double momentum,
                              double epsilon, bool training, bool fuse_relu, T* od, T* sm, T* si) {
  const int64_t C = x.shape().back(), rows = C > 0 ? x.numel() / C : 0;
  const T* xd = x.data<T>();
  std::vector<double> sum(C, 0.0), sum_sq(C, 0.0), shift(C, 0.0);
  if (training && rows > 0) {
    for (int64_t c = 0; c < C; ++c) shift[c] = static_cast<double>(xd[c]);
    channel_sums(rows, C, sum, sum_sq, [&](int64_t r0, int64_t n, double* s, double* q) {
      bn_stats_rows_of(xd + r0 * C, n, C, shift.data(), s, q);
    });
  }
  std::vector<T> mul(C), add(C);
  for (int64_t c = 0; c < C; ++c) {
    channel_statistics(c, training, rows, shift[c], sum[c], sum_sq[c], momentum, epsilon, rm, rv, sm, si);
    const BnAffine<T> a = bn_affine(sm[c], si[c], sc, bs, c, fuse_relu);
    mul[c] = a.mul, add[c] = a.add;
  }
  const BnRowConsts<T> k{mul.data(), add.data(), nullptr, nullptr, nullptr, nullptr, fuse_relu};
  for_row_chunks(rows, C, [&](int64_t, int64_t r0, int64_t n) {
    if (rd) bn_add_relu_rows_of(xd + r0 * C, rd + r0 * C, n, C, k, od + r0 * C);
    else bn_affine_rows_of(xd + r0 * C, n, C, k, od + r0 * C);
  });
}

// batch_norm_grad over [rows, C]: the constants as the NCHW path makes them, per channel.
template <typename T>
void batch_norm_grad_channels_last(const Tensor& x, const Tensor& grad, const T* sc, const T* bs, const T* sm, const T* si,
                                   bool training, bool fuse_relu, T* dxd, T* dsd, T* dbd) {
  const int64_t C = x.shape().back(), rows = C > 0 ? x.numel() / C : 0;
  const T* xd = x.data<T>();
  const T* gd = grad.data<T>();
  std::vector<T> mul(C), add(C), ka(C), kx(C), k0(C);
  for (int64_t c = 0; c < C; ++c) {
    const BnAffine<T> a = bn_affine(sm[c], si[c], sc, bs, c, fuse_relu);
    mul[c] = a.mul, add[c] = a.add;
  }
  BnRowConsts<T> k{mul.data(), add.data(), sm, ka.data(), kx.data(), k0.data(), fuse_relu};
  std::vector<double> sum_g, sum_gd;
  channel_sums(rows, C, sum_g, sum_gd, [&](int64_t r0, int64_t n, double* s, double* d) {
    bn_grad_sums_rows_of(gd + r0 * C, xd + r0 * C, n, C, k, s, d);
  });
  for (int64_t c = 0; c < C; ++c) {
    const BnGradConsts<T> g = grad_constants(sc, c, si[c], sum_g[c], sum_gd[c], rows, training);
    if (dsd) dsd[c] = g.dscale;
    if (dbd) dbd[c] = g.dbias;
    ka[c] = g.ka, kx[c] = g.kx, k0[c] = g.k0;
  }
  for_row_chunks(rows, C, [&](int64_t, int64_t r0, int64_t n) { bn_dx_rows_of(gd + r0 * C, xd + r0 * C, n, C, k, dxd + r0 * C); });
}

// batch_norm_add_relu_grad over [rows, C]: the masked gradient gm first (with the sums), then dx from it.
template <typename T>
void batch_norm_add_relu_grad_channels_last(const Tensor& x, const T* od, const T* gd, const T* sc, const T* sm, const T* si,
                                            bool training, T* gm, T* dxd, T* dsd, T* dbd) {
  const int64_t C = x.shape().back(), rows = C > 0 ? x.numel() / C : 0;
  const T* xd = x.data<T>();
  std::vector<T> ka(C), kx(C), k0(C);
  std::vector<double> sum_g, sum_gd;
  channel_sums(rows, C, sum_g, sum_gd, [&](int64_t r0, int64_t n, double* s, double* d) {
    bn_masked_grad_sums_rows_of(gd + r0 * C, od + r0 * C, xd + r0 * C, n, C, sm, gm + r0 * C, s, d);
  });
  for (int64_t c = 0; c < C; ++c) {
    const BnGradConsts<T> g = grad_constants(sc, c, si[c], sum_g[c], sum_gd[c], rows, training);
    if (dsd) dsd[c] = g.dscale;
    if (dbd) dbd[c] = g.dbias;
    ka[c] = g.ka, kx[c] = g.kx, k0[c] = g.k0;
  }
  const BnRowConsts<T> k{nullptr, nullptr, sm, ka.data(), kx.data(), k0.data(), false};
  for_row_chunks(rows, C, [&](int64_t, int64_t r0, int64_t n) { bn_dx_rows_of(gm + r0 * C, xd + r0 * C, n, C, k, dxd + r0 * C); });
}

// batch_norm, and with a residual (rd) batch_norm_add_relu: channels across threads, each walking its
// N runs of `inner` contiguous values (as batch_norm_grad).
template <typename T>
void batch_norm_any(const Tensor& x, const T* rd, const Tensor& scale, const Tensor& bias, const Tensor& running_mean,
                    const Tensor& running_var, double momentum, double epsilon, bool training, bool fuse_relu, bool channels_last,
                    Tensor& out, Tensor& saved_mean, Tensor& saved_invstd) {
  const ChannelView v = channel_view(x.shape());
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  T* rm = running_mean.data<T>();
  T* rv = running_var.data<T>();
  T* sm = saved_mean.data<T>();
  T* si = saved_invstd.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  const T* bs = bias.defined() ? bias.data<T>() : nullptr;
  if (channels_last) return batch_norm_channels_last(x, rd, sc, bs, rm, rv, momentum, epsilon, training, fuse_relu, od, sm, si);
  const int64_t n = v.N * v.inner;
  auto run = [&](int64_t b, int64_t c) { return xd + (b * v.C + c) * v.inner; };
  cpu::parallel_for(v.C, 3 * n, [&](int64_t c) {
    // One pass: sums of x - x[0] and their squares (see shifted_sums_run), in double.
    const double shift = training && n > 0 ? static_cast<double>(run(0, c)[0]) : 0.0;
    double sum = 0, sum_sq = 0;
    if (training)
      for (int64_t b = 0; b < v.N; ++b) shifted_sums_of(run(b, c), v.inner, shift, &sum, &sum_sq);
    channel_statistics(c, training, n, shift, sum, sum_sq, momentum, epsilon, rm, rv, sm, si);
    const BnAffine<T> a = bn_affine(sm[c], si[c], sc, bs, c, fuse_relu);
    for (int64_t b = 0; b < v.N; ++b) {
      const int64_t base = (b * v.C + c) * v.inner;
      if (!rd) {
        affine_of(run(b, c), v.inner, a, od + base);
        continue;
      }
#pragma omp simd
      for (int64_t i = 0; i < v.inner; ++i) od[base + i] = std::max(bn_value(xd[base + i], a) + rd[base + i], T(0));
    }
  });
}

}  // namespace

template <typename T>
void batch_norm(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& running_mean,
                const Tensor& running_var, double momentum, double epsilon, bool training, bool fuse_relu, bool channels_last,
                Tensor& out, Tensor& saved_mean, Tensor& saved_invstd) {
  batch_norm_any<T>(x, nullptr, scale, bias, running_mean, running_var, momentum, epsilon, training, fuse_relu, channels_last, out,
                    saved_mean, saved_invstd);
}

template <typename T>
void batch_norm_add_relu(const KernelContext& ctx, const Tensor& x, const Tensor& residual, const Tensor& scale, const Tensor& bias,
                         const Tensor& running_mean, const Tensor& running_var, double momentum, double epsilon, bool training,
                         bool channels_last, Tensor& out, Tensor& saved_mean, Tensor& saved_invstd) {
  batch_norm_any<T>(x, residual.data<T>(), scale, bias, running_mean, running_var, momentum, epsilon, training, false,
                    channels_last, out, saved_mean, saved_invstd);
}

// The masked gradient g' = grad where out > 0 is the residual's gradient; batch_norm_grad's passes then
// read it as their grad, with no relu of their own.
template <typename T>
void batch_norm_add_relu_grad(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& saved_mean,
                              const Tensor& saved_invstd, const Tensor& out, const Tensor& grad, bool training, bool channels_last,
                              Tensor& dx, Tensor& dresidual, Tensor& dscale, Tensor& dbias) {
  const ChannelView v = channel_view(x.shape());
  const T* xd = x.data<T>();
  const T* od = out.data<T>();
  const T* gd = grad.data<T>();
  const T* sm = saved_mean.data<T>();
  const T* si = saved_invstd.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  std::vector<T> scratch(dresidual.defined() ? 0 : static_cast<size_t>(x.numel()));  // g' when nobody asked for it
  T* gm = dresidual.defined() ? dresidual.data<T>() : scratch.data();
  T* dxd = dx.data<T>();
  T* dsd = dscale.defined() ? dscale.data<T>() : nullptr;
  T* dbd = dbias.defined() ? dbias.data<T>() : nullptr;
  if (channels_last) return batch_norm_add_relu_grad_channels_last(x, od, gd, sc, sm, si, training, gm, dxd, dsd, dbd);
  const int64_t n = v.N * v.inner;
  cpu::parallel_for(v.C, 4 * n, [&](int64_t c) {
    const T mean = sm[c];
    double sum_g = 0, sum_gd = 0;
    for (int64_t b = 0; b < v.N; ++b)
      for (int64_t i = (b * v.C + c) * v.inner, end = i + v.inner; i < end; ++i) {
        gm[i] = od[i] > T(0) ? gd[i] : T(0);
        sum_g += static_cast<double>(gm[i]);
        sum_gd += static_cast<double>(gm[i]) * static_cast<double>(xd[i] - mean);
      }
    const BnGradConsts<T> k = grad_constants(sc, c, static_cast<double>(si[c]), sum_g, sum_gd, n, training);
    if (dsd) dsd[c] = k.dscale;
    if (dbd) dbd[c] = k.dbias;
    for (int64_t b = 0; b < v.N; ++b) {
      const int64_t base = (b * v.C + c) * v.inner;
      bn_dx_of(gm + base, xd + base, v.inner, k.ka, k.kx, mean, k.k0, BnAffine<T>{T(0), T(0), false}, dxd + base);
    }
  });
}

// One channel's sums and gradients at a time, channels across threads (each channel's sums in one
// fixed order, so the result does not depend on the thread count), walking the channel's N runs of
// `inner` contiguous values. The sums accumulate in double; the elementwise pass is the formula
// rearranged into per-channel constants.
template <typename T>
void batch_norm_grad(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& saved_mean, const Tensor& saved_invstd,
                     const Tensor& grad, const Tensor& bias, bool training, bool fuse_relu, bool channels_last, Tensor& dx,
                     Tensor& dscale, Tensor& dbias) {
  const ChannelView v = channel_view(x.shape());
  const T* xd = x.data<T>();
  const T* gd = grad.data<T>();
  const T* sm = saved_mean.data<T>();
  const T* si = saved_invstd.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  const T* bs = bias.defined() ? bias.data<T>() : nullptr;
  T* dxd = dx.data<T>();
  T* dsd = dscale.defined() ? dscale.data<T>() : nullptr;
  T* dbd = dbias.defined() ? dbias.data<T>() : nullptr;
  if (channels_last) return batch_norm_grad_channels_last(x, grad, sc, bs, sm, si, training, fuse_relu, dxd, dsd, dbd);
  const int64_t n = v.N * v.inner;
  cpu::parallel_for(v.C, 3 * n, [&](int64_t c) {
    const T mean = sm[c];
    const double invstd = si[c];
    const BnAffine<T> relu_mask = bn_affine(sm[c], si[c], sc, bs, c, fuse_relu);  // where a fused relu passed the gradient
    double sum_g = 0, sum_gd = 0;  // dbias, and dscale / invstd
    for (int64_t b = 0; b < v.N; ++b) {
      const int64_t base = (b * v.C + c) * v.inner;
      grad_sums_of(gd + base, xd + base, v.inner, mean, relu_mask, &sum_g, &sum_gd);
    }
    const BnGradConsts<T> k = grad_constants(sc, c, invstd, sum_g, sum_gd, n, training);
    if (dsd) dsd[c] = k.dscale;
    if (dbd) dbd[c] = k.dbias;
    for (int64_t b = 0; b < v.N; ++b) {
      const int64_t base = (b * v.C + c) * v.inner;
      bn_dx_of(gd + base, xd + base, v.inner, k.ka, k.kx, mean, k.k0, relu_mask, dxd + base);
    }
  });
}

// Rows across threads; each row's statistics with the vector sums of sum_run.h.
template <typename T>
void layer_norm(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t begin_norm_axis, double epsilon,
                Tensor& out, Tensor& mean, Tensor& invstd) {
  int64_t outer, inner;
  norm_split(x.shape(), begin_norm_axis, outer, inner);
  const T* xd = x.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  const T* bs = bias.defined() ? bias.data<T>() : nullptr;
  T* od = out.data<T>();
  T* md = mean.data<T>();
  T* id = invstd.data<T>();
  cpu::parallel_for(outer, 3 * inner, [&](int64_t r) {
    double mu, is;
    if constexpr (std::is_same_v<T, float>) layer_norm_row_widest(xd + r * inner, sc, bs, inner, epsilon, od + r * inner, &mu, &is);
    else layer_norm_row(xd + r * inner, sc, bs, inner, epsilon, od + r * inner, &mu, &is);
    md[r] = static_cast<T>(mu);
    id[r] = static_cast<T>(is);
  });
}

// Rows across threads. dscale and dbias sum over rows: each fixed block of rows (its size depends on
// the shape only) sums into its own partials, added up in block order afterwards, so that the result
// does not depend on the thread count.
template <typename T>
void layer_norm_grad(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& mean, const Tensor& invstd,
                     const Tensor& grad, int64_t begin_norm_axis, Tensor& dx, Tensor& dscale, Tensor& dbias) {
  int64_t outer, inner;
  norm_split(x.shape(), begin_norm_axis, outer, inner);
  const T* xd = x.data<T>();
  const T* gd = grad.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  const T* md = mean.data<T>();
  const T* id = invstd.data<T>();
  T* dxd = dx.data<T>();
  const int64_t block = std::max<int64_t>(64, (outer + 255) / 256);  // at most 256 blocks of partials
  const int64_t blocks = (outer + block - 1) / block;
  std::vector<double> part_ds(static_cast<size_t>(blocks * inner), 0.0), part_db(part_ds.size(), 0.0);
  cpu::parallel_for(blocks, 3 * block * inner, [&](int64_t bk) {
    double* ds = part_ds.data() + bk * inner;
    double* db = part_db.data() + bk * inner;
    for (int64_t r = bk * block; r < std::min(outer, (bk + 1) * block); ++r) {
      const T* xr = xd + r * inner;
      const T* gr = gd + r * inner;
      if constexpr (std::is_same_v<T, float>) layer_norm_grad_row_widest(xr, gr, sc, inner, md[r], id[r], ds, db, dxd + r * inner);
      else layer_norm_grad_row(xr, gr, sc, inner, md[r], id[r], ds, db, dxd + r * inner);
    }
  });
  auto reduce_into = [&](Tensor& t, const std::vector<double>& parts) {
    if (!t.defined()) return;
    T* p = t.data<T>();
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t bk = 0; bk < blocks; ++bk) acc += parts[static_cast<size_t>(bk * inner + i)];
      p[i] = static_cast<T>(acc);
    }
  };
  reduce_into(dscale, part_ds);
  reduce_into(dbias, part_db);
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(batch_norm, reference, float, double)
PD_INSTANTIATE_KERNELS(batch_norm_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(batch_norm_add_relu, reference, float, double)
PD_INSTANTIATE_KERNELS(batch_norm_add_relu_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(layer_norm, reference, float, double)
PD_INSTANTIATE_KERNELS(layer_norm_grad, reference, float, double)
