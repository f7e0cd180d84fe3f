// scaled_dot_product_attention on the CPU, streaming over key blocks as FlashAttention does: each
// block of query rows keeps a running row maximum, row sum and output accumulator, so the scores of one
// [query block, key block] tile are all that is ever held (O(L) memory per head, not O(L^2)). Backward
// recomputes each tile's weights from the saved row log-sum-exp instead of storing them. Float on a CPU
// with AVX2 or AVX-512 runs the vector tile kernels of attention_tiles.h; other types and CPUs this
// file's portable form, whose tile products run on Eigen's GEMM.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/common/widest.h"
#include "cpu/ref/attention_common.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace attention {
// The vector forms (isa/attention_rows.cc).
void forward_item_avx2(const Geometry& g, const Tensors& t, int64_t nh, int64_t i0, float* scratch);
void forward_item_avx512(const Geometry& g, const Tensors& t, int64_t nh, int64_t i0, float* scratch);
void backward_item_avx2(const Geometry& g, const Tensors& t, int64_t item, float* scratch);
void backward_item_avx512(const Geometry& g, const Tensors& t, int64_t item, float* scratch);
}  // namespace attention

namespace {

using attention::Geometry;
using attention::kKeyBlock;
using attention::kQueryBlock;
using attention::key_end;
using attention::MaskKind;

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const RowMat<T>>;
template <typename T>
using MutMap = Eigen::Map<RowMat<T>>;

Geometry geometry(const char* op, int64_t N, int64_t H, int64_t Hk, int64_t Lq, int64_t Lk, int64_t E, int64_t Ev,
                  const Tensor& mask, double dropout_p, bool is_causal, double scale, int64_t seed) {
  PD_CHECK(dropout_p >= 0 && dropout_p < 1, ErrorCode::kInvalidArgument, "{}: argument 'dropout_p' must be in [0, 1), but received {}",
           op, dropout_p);
  Geometry g;
  g.N = N, g.H = H, g.Hk = Hk, g.Lq = Lq, g.Lk = Lk, g.E = E, g.Ev = Ev;
  g.scale = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(g.E));
  g.dropout = dropout_p;
  g.causal = is_causal;
  g.seed = static_cast<uint64_t>(seed);
  if (mask.defined()) {
    g.mask_kind = mask.dtype() == DType::boolean ? MaskKind::kBool : MaskKind::kAdditive;
    g.mask = mask.raw_data();
    const Shape& ms = mask.shape();
    int64_t stride = 1;
    for (int64_t d = static_cast<int64_t>(ms.size()) - 1; d >= 0; --d) {
      const int64_t axis = 4 - static_cast<int64_t>(ms.size()) + d;
      g.mask_stride[axis] = ms[d] == 1 ? 0 : stride;
      stride *= ms[d];
    }
  }
  return g;
}

Geometry geometry(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double dropout_p,
                  bool is_causal, double scale, int64_t seed) {
  return geometry(op, q.shape()[0], q.shape()[1], k.shape()[1], q.shape()[2], k.shape()[2], q.shape()[3], v.shape()[3], mask,
                  dropout_p, is_causal, scale, seed);
}

template <typename T>
void mask_tile(const Geometry& g, int64_t n, int64_t h, int64_t i0, int64_t j0, RowMat<T>& s) {
  attention::mask_tile(g, n, h, i0, j0, s.data(), s.rows(), s.cols(), s.cols());
}

template <typename T>
void dropout_tile(const Geometry& g, int64_t n, int64_t h, int64_t i0, int64_t j0, RowMat<T>& z) {
  attention::dropout_tile(g, n, h, i0, j0, z.data(), z.rows(), z.cols(), z.cols());
}

using ForwardItem = void (*)(const Geometry&, const attention::Tensors&, int64_t, int64_t, float*);

// A thread's scratch for the vector kernels, kept across calls.
float* thread_scratch(int64_t floats) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < floats) buffer.resize(static_cast<size_t>(floats));
  return buffer.data();
}

// Every forward item (a block of query rows of one head) across the threads.
void forward_items(const Geometry& g, const attention::Tensors& t, ForwardItem item) {
  const int64_t q_blocks = (g.Lq + kQueryBlock - 1) / kQueryBlock, floats = attention::forward_scratch_floats(g);
  cpu::parallel_for(g.N * g.H * q_blocks, kQueryBlock * g.Lk * (g.E + g.Ev), [&](int64_t i) {
    item(g, t, i / q_blocks, (i % q_blocks) * kQueryBlock, thread_scratch(floats));
  });
}

ForwardItem vector_forward() {
  return cpu::widest<ForwardItem>(nullptr, attention::forward_item_avx2, attention::forward_item_avx512);
}

}  // namespace

template <typename T>
void scaled_dot_product_attention(const KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                  double dropout_p, bool is_causal, double scale, int64_t seed, Tensor& out, Tensor& lse) {
  (void)ctx;
  const Geometry g = geometry("scaled_dot_product_attention", q, k, v, mask, dropout_p, is_causal, scale, seed);
  const int64_t q_blocks = (g.Lq + kQueryBlock - 1) / kQueryBlock;
  if constexpr (std::is_same_v<T, float>) {
    if (const ForwardItem item = vector_forward()) {
      attention::Tensors t;
      t.q = q.data<float>(), t.k = k.data<float>(), t.v = v.data<float>(), t.out = out.data<float>(), t.lse = lse.data<float>();
      t.qs = attention::contiguous_heads(g.H, g.Lq, g.E), t.os = attention::contiguous_heads(g.H, g.Lq, g.Ev);
      t.ks = attention::contiguous_heads(g.Hk, g.Lk, g.E), t.vs = attention::contiguous_heads(g.Hk, g.Lk, g.Ev);
      forward_items(g, t, item);
      return;
    }
  }
  const T* qd = q.data<T>();
  const T* kd = k.data<T>();
  const T* vd = v.data<T>();
  T* od = out.data<T>();
  T* ld = lse.data<T>();
  const T neg_inf = -std::numeric_limits<T>::infinity();
  cpu::parallel_for(g.N * g.H * q_blocks, kQueryBlock * g.Lk * (g.E + g.Ev), [&](int64_t item) {
    const int64_t nh = item / q_blocks, i0 = (item % q_blocks) * kQueryBlock;
    const int64_t n = nh / g.H, h = nh % g.H, kv = n * g.Hk + h / g.group();
    const int64_t rows = std::min(kQueryBlock, g.Lq - i0);
    const RowMat<T> qs = ConstMap<T>(qd + (nh * g.Lq + i0) * g.E, rows, g.E) * T(g.scale);
    RowMat<T> acc = RowMat<T>::Zero(rows, g.Ev), s, z;
    Eigen::Array<T, Eigen::Dynamic, 1> row_max = Eigen::Array<T, Eigen::Dynamic, 1>::Constant(rows, neg_inf);
    Eigen::Array<T, Eigen::Dynamic, 1> row_sum = Eigen::Array<T, Eigen::Dynamic, 1>::Zero(rows);
    const int64_t end = key_end(g, i0, rows);
    for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
      const int64_t cols = std::min(kKeyBlock, g.Lk - j0);
      const ConstMap<T> kb(kd + (kv * g.Lk + j0) * g.E, cols, g.E);
      s.noalias() = qs * kb.transpose();
      mask_tile(g, n, h, i0, j0, s);
      for (int64_t r = 0; r < rows; ++r) {
        const T m = std::max(row_max(r), s.row(r).maxCoeff());
        if (m == neg_inf) {  // everything so far is masked
          s.row(r).setZero();
          continue;
        }
        const T correction = std::exp(row_max(r) - m);
        s.row(r) = (s.row(r).array() - m).exp().matrix();
        row_sum(r) = row_sum(r) * correction + s.row(r).sum();
        acc.row(r) *= correction;
        row_max(r) = m;
      }
      if (g.dropout > 0) {
        z.resize(rows, cols);
        dropout_tile(g, n, h, i0, j0, z);
        s = s.cwiseProduct(z);
      }
      acc.noalias() += s * ConstMap<T>(vd + (kv * g.Lk + j0) * g.Ev, cols, g.Ev);
    }
    MutMap<T> o(od + (nh * g.Lq + i0) * g.Ev, rows, g.Ev);
    for (int64_t r = 0; r < rows; ++r) {
      const bool empty = row_sum(r) == T(0);
      if (empty) o.row(r).setZero();
      else o.row(r) = acc.row(r) / row_sum(r);
      ld[nh * g.Lq + i0 + r] = empty ? neg_inf : row_max(r) + std::log(row_sum(r));
    }
  });
}

template <typename T>
void scaled_dot_product_attention_grad(const KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& out, const Tensor& lse, const Tensor& grad, const Tensor& mask,
                                       double dropout_p, bool is_causal, double scale, int64_t seed, Tensor& dq, Tensor& dk,
                                       Tensor& dv) {
  (void)ctx;
  const Geometry g = geometry("scaled_dot_product_attention_grad", q, k, v, mask, dropout_p, is_causal, scale, seed);
  if constexpr (std::is_same_v<T, float>) {
    if (auto item = cpu::widest<decltype(&attention::backward_item_avx2)>(nullptr, attention::backward_item_avx2,
                                                                          attention::backward_item_avx512)) {
      attention::Tensors t;
      t.q = q.data<float>(), t.k = k.data<float>(), t.v = v.data<float>(), t.o = out.data<float>();
      t.lse_in = lse.data<float>(), t.grad = grad.data<float>();
      t.dq = dq.data<float>(), t.dk = dk.data<float>(), t.dv = dv.data<float>();
      const int64_t floats = attention::backward_scratch_floats(g);
      cpu::parallel_for(g.N * g.Hk, g.group() * g.Lq * g.Lk * (g.E + g.Ev),
                        [&](int64_t i) { item(g, t, i, thread_scratch(floats)); });
      return;
    }
  }
  const T* qd = q.data<T>();
  const T* kd = k.data<T>();
  const T* vd = v.data<T>();
  const T* od = out.data<T>();
  const T* ld = lse.data<T>();
  const T* gd = grad.data<T>();
  T* dqd = dq.data<T>();
  T* dkd = dk.data<T>();
  T* dvd = dv.data<T>();
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const T sc = T(g.scale);
  // One item per (batch, kv head): it owns its dk, dv rows and the dq rows of the query heads that share them.
  cpu::parallel_for(g.N * g.Hk, g.group() * g.Lq * g.Lk * (g.E + g.Ev), [&](int64_t item) {
    MutMap<T> dk_all(dkd + item * g.Lk * g.E, g.Lk, g.E);
    MutMap<T> dv_all(dvd + item * g.Lk * g.Ev, g.Lk, g.Ev);
    dk_all.setZero();
    dv_all.setZero();
    const int64_t n = item / g.Hk;
    RowMat<T> s, dp, z, dq_acc;
    for (int64_t h = (item % g.Hk) * g.group(); h < (item % g.Hk + 1) * g.group(); ++h) {
      const int64_t nh = n * g.H + h;
      for (int64_t i0 = 0; i0 < g.Lq; i0 += kQueryBlock) {
        const int64_t rows = std::min(kQueryBlock, g.Lq - i0);
        const RowMat<T> qs = ConstMap<T>(qd + (nh * g.Lq + i0) * g.E, rows, g.E) * sc;
        const ConstMap<T> go(gd + (nh * g.Lq + i0) * g.Ev, rows, g.Ev);
        const ConstMap<T> o(od + (nh * g.Lq + i0) * g.Ev, rows, g.Ev);
        const Eigen::Array<T, Eigen::Dynamic, 1> delta = go.cwiseProduct(o).rowwise().sum().array();
        const T* row_lse = ld + nh * g.Lq + i0;
        dq_acc = RowMat<T>::Zero(rows, g.E);
        const int64_t end = key_end(g, i0, rows);
        for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
          const int64_t cols = std::min(kKeyBlock, g.Lk - j0);
          const ConstMap<T> kb(kd + (item * g.Lk + j0) * g.E, cols, g.E);
          const ConstMap<T> vb(vd + (item * g.Lk + j0) * g.Ev, cols, g.Ev);
          s.noalias() = qs * kb.transpose();
          mask_tile(g, n, h, i0, j0, s);
          for (int64_t r = 0; r < rows; ++r) {  // the weights P, from the forward's log-sum-exp
            if (row_lse[r] == neg_inf) s.row(r).setZero();
            else s.row(r) = (s.row(r).array() - row_lse[r]).exp().matrix();
          }
          dp.noalias() = go * vb.transpose();
          if (g.dropout > 0) {
            z.resize(rows, cols);
            dropout_tile(g, n, h, i0, j0, z);
            dv_all.middleRows(j0, cols).noalias() += s.cwiseProduct(z).transpose() * go;
            dp = dp.cwiseProduct(z);
          } else {
            dv_all.middleRows(j0, cols).noalias() += s.transpose() * go;
          }
          // dS = P * (dP - delta); the scale enters dq and dk once.
          s = s.cwiseProduct((dp.array().colwise() - delta).matrix());
          dq_acc.noalias() += s * kb;
          dk_all.middleRows(j0, cols).noalias() += s.transpose() * qs;
        }
        MutMap<T>(dqd + (nh * g.Lq + i0) * g.E, rows, g.E) = dq_acc * sc;
      }
    }
  });
}

// Heads packed along the last axis: qkv [N, L, (H + 2 Hk) E] -> out [N, L, H E]. The vector kernels read
// the heads in place through their strides; the portable form gathers contiguous q, k, v and runs the
// kernel above.
template <typename T>
void qkv_attention(const KernelContext& ctx, const Tensor& qkv, int64_t num_heads, int64_t num_kv_heads, const Tensor& mask,
                   bool is_causal, double scale, Tensor& out) {
  const int64_t N = qkv.shape()[0], L = qkv.shape()[1], W = qkv.shape()[2], H = num_heads, Hk = num_kv_heads;
  const int64_t E = W / (H + 2 * Hk);
  const Geometry g = geometry("qkv_attention", N, H, Hk, L, L, E, E, mask, 0.0, is_causal, scale, 0);
  if constexpr (std::is_same_v<T, float>) {
    if (const ForwardItem item = vector_forward()) {
      attention::Tensors t;
      t.q = qkv.data<float>(), t.k = t.q + H * E, t.v = t.k + Hk * E, t.out = out.data<float>();
      t.qs = t.ks = t.vs = {L * W, E, W};
      t.os = {L * H * E, E, H * E};
      forward_items(g, t, item);
      return;
    }
  }
  auto heads = [&](int64_t first, int64_t count) {  // [N, count, L, E], contiguous
    return qkv.as_strided({N, count, L, E}, {L * W, E, W, 1}, qkv.offset() + first * E).contiguous();
  };
  const Tensor q = heads(0, H), k = heads(H, Hk), v = heads(H + Hk, Hk);
  Tensor o = Tensor::empty({N, H, L, E}, qkv.dtype()), lse = Tensor::empty({N, H, L}, qkv.dtype());
  scaled_dot_product_attention<T>(ctx, q, k, v, mask, 0.0, is_causal, scale, 0, o, lse);
  const T* od = o.data<T>();
  T* dst = out.data<T>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l)
        std::copy_n(od + ((n * H + h) * L + l) * E, E, dst + (n * L + l) * H * E + h * E);
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(scaled_dot_product_attention, reference, float, double)
PD_INSTANTIATE_KERNELS(scaled_dot_product_attention_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(qkv_attention, reference, float, double)
