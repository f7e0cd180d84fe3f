// Reference matmul and linear: Eigen GEMM over row-major maps, batch dims broadcast NumPy-style; a linear
// of one f32 row on the vector GEMV of isa/linear_rows.cc.
#include <Eigen/Dense>
#include <algorithm>

#include "cpu/common/widest.h"
#include "cpu/ref/small_linear.h"
#include "kernels.h"
#include "pd/core/thread_pool.h"
#include "pd/kernels/matmul_geometry.h"

namespace pd::kernels::reference {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const RowMat<T>>;
template <typename T>
using MutMap = Eigen::Map<RowMat<T>>;

// A single-row linear of at least this many multiply-adds splits its columns across the threads.
constexpr int64_t kParallelGemvMacs = int64_t{1} << 18;

}  // namespace

template <typename T>
void matmul(const KernelContext& ctx, const Tensor& x, const Tensor& y, bool transpose_x, bool transpose_y, Tensor& out) {
  MatView xv = split_matrix(x.shape(), true);
  MatView yv = split_matrix(y.shape(), false);
  // A 1-D operand is never transposed: it is a vector whichever way it is read.
  if (x.dim() == 1) transpose_x = false;
  if (y.dim() == 1) transpose_y = false;
  const int64_t M = transpose_x ? xv.cols : xv.rows;
  const int64_t K = transpose_x ? xv.rows : xv.cols;
  const int64_t N = transpose_y ? yv.rows : yv.cols;
  const int64_t Ky = transpose_y ? yv.cols : yv.rows;
  PD_CHECK(K == Ky, ErrorCode::kShape,
           "matmul: contraction dims of 'x' ({}) and 'y' ({}) must match, got shapes {} and {}", K, Ky,
           shape_str(x.shape()), shape_str(y.shape()));

  // Broadcast batch shape, aligned right.
  const size_t nb = std::max(xv.batch.size(), yv.batch.size());
  Shape ob(nb, 1), xb(nb, 1), yb(nb, 1);
  for (size_t i = 0; i < xv.batch.size(); ++i) xb[nb - xv.batch.size() + i] = xv.batch[i];
  for (size_t i = 0; i < yv.batch.size(); ++i) yb[nb - yv.batch.size() + i] = yv.batch[i];
  for (size_t i = 0; i < nb; ++i) {
    PD_CHECK(xb[i] == yb[i] || xb[i] == 1 || yb[i] == 1, ErrorCode::kShape,
             "matmul: cannot broadcast batch dims of 'x' {} and 'y' {}", shape_str(x.shape()),
             shape_str(y.shape()));
    ob[i] = xb[i] == 1 ? yb[i] : xb[i];
  }
  // Element strides (in matrices) of each batch dim; 0 where broadcast.
  Shape xs(nb, 0), ys(nb, 0);
  int64_t accx = 1, accy = 1;
  for (int64_t i = static_cast<int64_t>(nb) - 1; i >= 0; --i) {
    xs[i] = xb[i] == 1 ? 0 : accx;
    ys[i] = yb[i] == 1 ? 0 : accy;
    accx *= xb[i];
    accy *= yb[i];
  }
  const int64_t batches = shape_numel(ob);
  const T* xd = x.data<T>();
  const T* yd = y.data<T>();
  T* od = out.data<T>();
  const int64_t xmat = xv.rows * xv.cols, ymat = yv.rows * yv.cols;
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rem = b, xi = 0, yi = 0;
    for (int64_t i = static_cast<int64_t>(nb) - 1; i >= 0; --i) {
      const int64_t c = rem % ob[i];
      rem /= ob[i];
      xi += c * xs[i];
      yi += c * ys[i];
    }
    ConstMap<T> A(xd + xi * xmat, xv.rows, xv.cols);
    ConstMap<T> B(yd + yi * ymat, yv.rows, yv.cols);
    MutMap<T> C(od + b * M * N, M, N);
    if (!transpose_x && !transpose_y) C.noalias() = A * B;
    else if (transpose_x && !transpose_y) C.noalias() = A.transpose() * B;
    else if (!transpose_x && transpose_y) C.noalias() = A * B.transpose();
    else C.noalias() = A.transpose() * B.transpose();
  }
}

template <typename T>
void linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  const int64_t in_f = weight.shape()[1];
  const int64_t out_f = weight.shape()[0];
  const int64_t rows = in_f == 0 ? (out_f == 0 ? 0 : out.numel() / out_f) : x.numel() / in_f;
  ConstMap<T> X(x.data<T>(), rows, in_f);
  ConstMap<T> W(weight.data<T>(), out_f, in_f);
  MutMap<T> Y(out.data<T>(), rows, out_f);
  if constexpr (std::is_same_v<T, float>) {
    // A few rows of f32 on AVX2 / AVX-512: the vector GEMV (isa/linear_rows.cc), each weight row read
    // once for every row, across threads by blocks of outputs when large. Eigen's row-major GEMV below
    // read MobileNetV2's classifier in the model at 54-68 us on 2 threads against its 32-36; at batch 8
    // oneDNN's matmul took 418 us there, woken on OpenMP's team.
    // More rows in chunks of 8 over each block of outputs, whose weight rows (64 of them) stay in L2 for
    // the later chunks (gemv_takes): at 16 rows oneDNN's matmul took 4x the time of 8 (0.27 against
    // 0.066 ms for the [1280] x [1000, 1280] classifier, 2 threads, Zen 5).
    const auto gemv = cpu::widest<void (*)(const Gemv&, int64_t, int64_t)>(nullptr, gemv_rows_avx2, gemv_rows_avx512);
    if (rows >= 1 && gemv_takes(rows, in_f) && gemv != nullptr) {
      const int64_t blocks = (out_f + kGemvColumns - 1) / kGemvColumns;
      const auto block = [&](int64_t b) {
        for (int64_t r0 = 0; r0 < rows; r0 += kGemvMostRows) {
          const Gemv g{x.data<float>() + r0 * in_f, weight.data<float>(), bias.defined() ? bias.data<float>() : nullptr,
                       out.data<float>() + r0 * out_f, in_f, std::min(kGemvMostRows, rows - r0), out_f};
          gemv(g, b * kGemvColumns, std::min(out_f, (b + 1) * kGemvColumns));
        }
      };
      if (rows * out_f * in_f >= kParallelGemvMacs) parallel_items(blocks, block);
      else
        for (int64_t b = 0; b < blocks; ++b) block(b);
      return;
    }
  }
  if (rows == 1 && out_f * in_f >= kParallelGemvMacs) {
    // A large matrix-vector product (a classifier's [1280] x [1000, 1280] at batch 1: 5 MB of weight, 64
    // us on one thread, 155 in MobileNetV2 where the maps had pushed the weight out of cache) is bound by
    // reading the weight: the threads take column blocks of a fixed width, so each result is the same
    // dot product whatever the thread count.
    const int64_t blocks = (out_f + kGemvColumns - 1) / kGemvColumns;
    parallel_items(blocks, [&](int64_t b) {
      const int64_t n0 = b * kGemvColumns, n = std::min(kGemvColumns, out_f - n0);
      Y.middleCols(n0, n).noalias() = X * W.middleRows(n0, n).transpose();
    });
  } else {
    Y.noalias() = X * W.transpose();
  }
  if (bias.defined()) {
    Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> b(bias.data<T>(), out_f);
    Y.rowwise() += b;
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(matmul, reference, float, double)
PD_INSTANTIATE_KERNELS(linear, reference, float, double)
