// layer_norm and its gradient on CUDA, with the semantics of kernels/cpu/ref/norm.cc (layer_norm_row and
// layer_norm_grad_row in cpu/ref/sum_run.h): x viewed as [rows, n] with n spanning the axes from
// begin_norm_axis on; each row's mean and variance in two passes in double (an empty row: mean 0,
// variance 0); y = (x - mean) * invstd [* scale] [+ bias] in acc_t<T> with the statistics rounded to it;
// mean and invstd stored in x's dtype. The gradient reads the saved statistics back as double.
// A warp per row (n <= 1024) or a block per row. dscale and dbias sum over rows: column tiles, the rows
// split into fixed slices whose double partials a second kernel adds in slice order (deterministic).
#include <algorithm>

#include "cuda/reduce_groups.cuh"

namespace pd::kernels::cuda {
namespace {

struct AddOp {
  template <typename S>
  __device__ S operator()(S a, S b) const { return a + b; }
};

// x viewed as [rows, n]; a 0-D x is one row of one element, as the reference's norm_split.
void norm_split(const Shape& s, int64_t begin_norm_axis, const char* what, int64_t& rows, int64_t& n) {
  const int64_t nd = static_cast<int64_t>(s.size());
  const int64_t begin = nd == 0 ? 0 : normalize_axis(begin_norm_axis, nd, what);
  rows = 1;
  n = 1;
  for (int64_t i = 0; i < nd; ++i) (i < begin ? rows : n) *= s[i];
}

// G lanes (32 or the block) per row.
template <int G, typename D, typename A>
__global__ void ln_forward_kernel(const D* __restrict__ x, const D* __restrict__ scale, const D* __restrict__ bias,
                                  D* __restrict__ out, D* __restrict__ mean, D* __restrict__ invstd, int64_t rows, int64_t n,
                                  double eps) {
  __shared__ double shared[32];
  const GroupLanes<G> lanes{static_cast<int>(threadIdx.x % G), shared};
  const int64_t per_block = blockDim.x / G;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / G; r < rows;
       r += static_cast<int64_t>(gridDim.x) * per_block) {
    const D* xr = x + r * n;
    double s = 0;
    for (int64_t c = lanes.lane; c < n; c += G) s += load_as<double>(xr[c]);
    s = lanes.all(s, AddOp{});
    const double mu = n > 0 ? s / static_cast<double>(n) : 0.0;
    double ss = 0;
    for (int64_t c = lanes.lane; c < n; c += G) {
      const double d = load_as<double>(xr[c]) - mu;
      ss += d * d;
    }
    ss = lanes.all(ss, AddOp{});
    const double var = n > 0 ? ss / static_cast<double>(n) : 0.0;
    const double is = 1.0 / ::sqrt(var + eps);
    if (lanes.lane == 0) {
      mean[r] = store_as<D>(mu);
      invstd[r] = store_as<D>(is);
    }
    const A m = static_cast<A>(mu), k = static_cast<A>(is);
    D* o = out + r * n;
    for (int64_t c = lanes.lane; c < n; c += G) {
      A y = (load_as<A>(xr[c]) - m) * k;
      if (scale) y = y * load_as<A>(scale[c]);
      if (bias) y = y + load_as<A>(bias[c]);
      o[c] = store_as<D>(y);
    }
  }
}

// dx = invstd * (gs - mean(gs) - xhat * mean(gs * xhat)), gs = g * scale, xhat = (x - mean) * invstd.
template <int G, typename D>
__global__ void ln_dx_kernel(const D* __restrict__ x, const D* __restrict__ grad, const D* __restrict__ scale,
                             const D* __restrict__ mean, const D* __restrict__ invstd, D* __restrict__ dx, int64_t rows,
                             int64_t n) {
  __shared__ double shared[32];
  const GroupLanes<G> lanes{static_cast<int>(threadIdx.x % G), shared};
  const int64_t per_block = blockDim.x / G;
  const double inv_n = 1.0 / static_cast<double>(n);  // n > 0: the launch skips empty rows
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / G; r < rows;
       r += static_cast<int64_t>(gridDim.x) * per_block) {
    const D* xr = x + r * n;
    const D* gr = grad + r * n;
    const double mu = load_as<double>(mean[r]), is = load_as<double>(invstd[r]);
    double sum_gs = 0, sum_gsx = 0;
    for (int64_t c = lanes.lane; c < n; c += G) {
      const double xhat = (load_as<double>(xr[c]) - mu) * is;
      const double gs = load_as<double>(gr[c]) * (scale ? load_as<double>(scale[c]) : 1.0);
      sum_gs += gs;
      sum_gsx += gs * xhat;
    }
    const double mean_gs = lanes.all(sum_gs, AddOp{}) * inv_n;
    const double mean_gsx = lanes.all(sum_gsx, AddOp{}) * inv_n;
    D* d = dx + r * n;
    for (int64_t c = lanes.lane; c < n; c += G) {
      const double xhat = (load_as<double>(xr[c]) - mu) * is;
      const double gs = load_as<double>(gr[c]) * (scale ? load_as<double>(scale[c]) : 1.0);
      d[c] = store_as<D>(is * (gs - mean_gs - xhat * mean_gsx));
    }
  }
}

// Block (32, kColRows) per (tile of 32 columns, slice of rows): partial sums of g * xhat (dscale) and g
// (dbias) into part[slice][column].
constexpr int kColRows = 8;

template <typename D>
__global__ void ln_columns_kernel(const D* __restrict__ x, const D* __restrict__ grad, const D* __restrict__ mean,
                                  const D* __restrict__ invstd, double* __restrict__ part_ds, double* __restrict__ part_db,
                                  int64_t rows, int64_t n, int64_t slice) {
  __shared__ double sds[kColRows][32], sdb[kColRows][32];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * slice;
  const int64_t r1 = r0 + slice < rows ? r0 + slice : rows;
  double ds = 0, db = 0;
  if (c < n) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColRows) {
      const double gv = load_as<double>(grad[r * n + c]);
      const double xhat = (load_as<double>(x[r * n + c]) - load_as<double>(mean[r])) * load_as<double>(invstd[r]);
      ds += gv * xhat;
      db += gv;
    }
  }
  sds[threadIdx.y][threadIdx.x] = ds;
  sdb[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < n) {
    for (int y = 1; y < kColRows; ++y) {
      ds += sds[y][threadIdx.x];
      db += sdb[y][threadIdx.x];
    }
    part_ds[blockIdx.y * n + c] = ds;
    part_db[blockIdx.y * n + c] = db;
  }
}

template <typename D>
__global__ void ln_columns_total_kernel(const double* __restrict__ part_ds, const double* __restrict__ part_db,
                                        D* __restrict__ dscale, D* __restrict__ dbias, int64_t n, int64_t slices) {
  PD_GRID_STRIDE(c, n) {
    double ds = 0, db = 0;
    for (int64_t s = 0; s < slices; ++s) {
      ds += part_ds[s * n + c];
      db += part_db[s * n + c];
    }
    if (dscale) dscale[c] = store_as<D>(ds);
    if (dbias) dbias[c] = store_as<D>(db);
  }
}

template <typename T>
const dev_t<T>* optional_ptr(const Tensor& t) {
  return t.defined() ? dptr<T>(t) : nullptr;
}

unsigned row_blocks(int64_t rows, int g) {
  const int64_t per_block = kThreads / g;
  const int64_t b = (rows + per_block - 1) / per_block;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

}  // namespace

template <typename T>
void layer_norm(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t begin_norm_axis,
                double epsilon, Tensor& out, Tensor& mean, Tensor& invstd) {
  using D = dev_t<T>;
  using A = acc_t<T>;
  int64_t rows, n;
  norm_split(x.shape(), begin_norm_axis, "layer_norm: argument 'begin_norm_axis'", rows, n);
  if (rows == 0) return;  // an empty row (n == 0) still has its mean and invstd
  cudaStream_t stream = stream_of(ctx);
  if (n <= 1024)
    ln_forward_kernel<32, D, A><<<row_blocks(rows, 32), kThreads, 0, stream>>>(
        dptr<T>(x), optional_ptr<T>(scale), optional_ptr<T>(bias), dptr<T>(out), dptr<T>(mean), dptr<T>(invstd), rows, n,
        epsilon);
  else
    ln_forward_kernel<kThreads, D, A><<<row_blocks(rows, kThreads), kThreads, 0, stream>>>(
        dptr<T>(x), optional_ptr<T>(scale), optional_ptr<T>(bias), dptr<T>(out), dptr<T>(mean), dptr<T>(invstd), rows, n,
        epsilon);
  PD_CUDA_CHECK_LAUNCH("layer_norm");
}

template <typename T>
void layer_norm_grad(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& mean, const Tensor& invstd,
                     const Tensor& grad, int64_t begin_norm_axis, Tensor& dx, Tensor& dscale, Tensor& dbias) {
  using D = dev_t<T>;
  int64_t rows, n;
  norm_split(x.shape(), begin_norm_axis, "layer_norm: argument 'begin_norm_axis'", rows, n);
  cudaStream_t stream = stream_of(ctx);
  if (rows > 0 && n > 0 && dx.defined()) {
    if (n <= 1024)
      ln_dx_kernel<32, D><<<row_blocks(rows, 32), kThreads, 0, stream>>>(dptr<T>(x), dptr<T>(grad), optional_ptr<T>(scale),
                                                                          dptr<T>(mean), dptr<T>(invstd), dptr<T>(dx), rows, n);
    else
      ln_dx_kernel<kThreads, D><<<row_blocks(rows, kThreads), kThreads, 0, stream>>>(
          dptr<T>(x), dptr<T>(grad), optional_ptr<T>(scale), dptr<T>(mean), dptr<T>(invstd), dptr<T>(dx), rows, n);
    PD_CUDA_CHECK_LAUNCH("layer_norm_grad");
  }
  // dscale and dbias: sums over the rows (0 with no rows).
  if (n == 0 || (!dscale.defined() && !dbias.defined())) return;
  const int64_t tiles = (n + 31) / 32;
  int64_t slices = (rows + 255) / 256;  // at most 256 rows a slice...
  const int64_t max_slices = std::max<int64_t>(1, 2048 / tiles);  // ...unless the tiles fill the GPU already
  if (slices > max_slices) slices = max_slices;
  if (slices < 1) slices = 1;
  const int64_t slice = std::max<int64_t>(1, (rows + slices - 1) / slices);
  double* part = static_cast<double*>(workspace(ctx, static_cast<size_t>(2 * slices * n) * sizeof(double)));
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(slices));
  ln_columns_kernel<D><<<grid, dim3(32, kColRows), 0, stream>>>(dptr<T>(x), dptr<T>(grad), dptr<T>(mean), dptr<T>(invstd), part,
                                                               part + slices * n, rows, n, slice);
  PD_CUDA_CHECK_LAUNCH("layer_norm_grad");
  ln_columns_total_kernel<D><<<blocks_for(n), kThreads, 0, stream>>>(
      part, part + slices * n, dscale.defined() ? dptr<T>(dscale) : nullptr, dbias.defined() ? dptr<T>(dbias) : nullptr, n,
      slices);
  PD_CUDA_CHECK_LAUNCH("layer_norm_grad");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(layer_norm, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(layer_norm_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
