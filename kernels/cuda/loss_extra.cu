// mse_loss, binary_cross_entropy_with_logits (with its gradient) and nll_loss (with its gradient), as the
// reference kernels in cpu/ref/pointwise_loss.cc and cpu/ref/nll_loss.cc. Each element's loss is
// computed in double; reduction none stores it, sum / mean add the losses in double: per-block partials
// (at most kLossBlocks, a number fixed by the size) added in block order by one more block, so the
// result is deterministic. mean divides by the element count (mse, bce; 0/0 = NaN when empty) or by the
// number of labels other than ignore_index (nll). nll_loss checks its labels on the device first
// (label_scan.cuh: one synchronisation).
#include <algorithm>
#include <string>

#include "cpu/common/loss_reduction.h"
#include "cpu/common/nll_view.h"
#include "cuda/elementwise.cuh"
#include "cuda/label_scan.cuh"
#include "cuda/reduce_groups.cuh"

namespace pd::kernels::cuda {
namespace {

using cpu::parse_reduction;
using cpu::Reduction;

constexpr int kLossBlocks = 256;
constexpr size_t kPartialOffset = 256;  // nll_loss: the partials follow the label stats in the workspace

struct AddOp {
  template <typename S>
  __device__ S operator()(S a, S b) const { return a + b; }
};

// reduction none: out[i] = f(i); else each block's sum of f(i) into partial[blockIdx.x].
template <typename D, typename F>
__global__ void losses_kernel(F f, int64_t n, D* __restrict__ out, double* __restrict__ partial) {
  __shared__ double red[32];
  double total = 0;
  PD_GRID_STRIDE(i, n) {
    const double l = f(i);
    if (out != nullptr) out[i] = store_as<D>(l);
    else total += l;
  }
  if (partial == nullptr) return;
  total = block_allreduce(total, AddOp{}, red);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// One block: out[0] = (sum of the partials, in order) / divisor.
template <typename D>
__global__ void losses_total_kernel(const double* __restrict__ partial, int blocks, D* __restrict__ out, double divisor) {
  __shared__ double red[32];
  double total = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) total += partial[b];
  total = block_allreduce(total, AddOp{}, red);
  if (threadIdx.x == 0) out[0] = store_as<D>(total / divisor);
}

// The losses f(0..n) into out by the reduction; `partial` holds kLossBlocks doubles of device memory.
// mean divides by `count`.
template <typename T, typename F>
void reduce_losses(const KernelContext& ctx, const char* op, int64_t n, Reduction red, const F& f, double count, Tensor& out,
                   double* partial) {
  using D = dev_t<T>;
  cudaStream_t stream = stream_of(ctx);
  if (red == Reduction::kNone) {
    if (n == 0) return;
    losses_kernel<D, F><<<blocks_for(n), kThreads, 0, stream>>>(f, n, dptr<T>(out), nullptr);
    check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
    return;
  }
  const unsigned blocks = std::min<unsigned>(blocks_for(n), kLossBlocks);
  losses_kernel<D, F><<<blocks, kThreads, 0, stream>>>(f, n, nullptr, partial);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  losses_total_kernel<D><<<1, kThreads, 0, stream>>>(partial, static_cast<int>(blocks), dptr<T>(out),
                                                     red == Reduction::kMean ? count : 1.0);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

// softplus(-x) = log(1 + e^-x), without overflow for either sign.
__device__ __forceinline__ double softplus_neg(double x) { return ::log1p(::exp(-::fabs(x))) + (x < 0 ? -x : 0.0); }

template <typename D>
struct MseLoss {
  const D* __restrict__ x;
  const D* __restrict__ y;
  __device__ double operator()(int64_t i) const {
    const double d = load_as<double>(x[i]) - load_as<double>(y[i]);
    return d * d;
  }
};

// pos_weight broadcast to x: its element for x's element i (weight 1 without it).
template <typename D>
struct PosWeight {
  const D* __restrict__ w;
  EwiseGeometry<1> g;
  __device__ int64_t index(int64_t i) const {
    int64_t off = 0;
    for (int d = g.nd - 1; d >= 0; --d) {
      off += (i % g.shape[d]) * g.strides[0][d];
      i /= g.shape[d];
    }
    return off;
  }
  __device__ double at(int64_t i) const { return w ? load_as<double>(w[index(i)]) : 1.0; }
};

template <typename T>
PosWeight<dev_t<T>> pos_weight_of(const Tensor& x, const Tensor& pos_weight, const char* op) {
  if (!pos_weight.defined()) return {nullptr, EwiseGeometry<1>{}};
  return {dptr<T>(pos_weight), ewise_geometry<1>(op, x, {&pos_weight})};
}

// (1 - y) x + (1 + (pw - 1) y) softplus(-x)
template <typename D>
struct BceLoss {
  const D* __restrict__ x;
  const D* __restrict__ y;
  PosWeight<D> pw;
  __device__ double operator()(int64_t i) const {
    const double xv = load_as<double>(x[i]), yv = load_as<double>(y[i]), w = pw.at(i);
    return (1 - yv) * xv + (1 + (w - 1) * yv) * softplus_neg(xv);
  }
};

// d/dx = (1 - y) - (1 + (pw - 1) y) sigmoid(-x); d/dy = (pw - 1) softplus(-x) - x; each element's share of
// d/dpw = y softplus(-x) goes to contrib (x's shape) to be summed over the elements each weight covers.
template <typename D>
__global__ void bce_grad_kernel(const D* __restrict__ x, const D* __restrict__ y, const D* __restrict__ grad, PosWeight<D> pw,
                                D* __restrict__ dx, D* __restrict__ dy, double* __restrict__ contrib, int64_t n,
                                bool per_element, double scale) {
  PD_GRID_STRIDE(i, n) {
    const double xv = load_as<double>(x[i]), yv = load_as<double>(y[i]), w = pw.at(i);
    const double g = load_as<double>(grad[per_element ? i : 0]) * scale;
    const double sp = softplus_neg(xv);
    const double sig_neg = xv >= 0 ? ::exp(-xv) / (1 + ::exp(-xv)) : 1 / (1 + ::exp(xv));
    dx[i] = store_as<D>(g * ((1 - yv) - (1 + (w - 1) * yv) * sig_neg));
    dy[i] = store_as<D>(g * ((w - 1) * sp - xv));
    if (contrib) contrib[i] = g * yv * sp;
  }
}

// dpos_weight[o] = the sum of its group of contributions.
template <typename D>
struct SumGroup {
  const double* __restrict__ c;
  D* __restrict__ out;
  template <int G>
  __device__ void operator()(int64_t o, int64_t base, const GroupLanes<G>& lanes, const GroupGeometry& g) const {
    double s = 0;
    for (int64_t k = lanes.lane; k < g.group; k += G) s += c[base + g.reduced_offset(k)];
    s = lanes.all(s, AddOp{});
    if (lanes.lane == 0) out[o] = store_as<D>(s);
  }
};

using cpu::NllView;
using cpu::nll_view;

// The scan has rejected any label that is neither ignore_index nor in [0, C).
template <typename D, typename L>
struct NllLoss {
  const D* __restrict__ x;
  const L* __restrict__ label;
  int64_t C, inner, ignore_index;
  __device__ double operator()(int64_t s) const {
    const int64_t y = static_cast<int64_t>(label[s]);
    if (y == ignore_index) return 0.0;
    return -load_as<double>(x[((s / inner) * C + y) * inner + s % inner]);
  }
};

template <typename D, typename L>
__global__ void nll_grad_kernel(const L* __restrict__ label, const D* __restrict__ grad, D* __restrict__ dx, int64_t samples,
                                int64_t C, int64_t inner, int64_t ignore_index, bool per_sample, double scale) {
  PD_GRID_STRIDE(s, samples) {
    const int64_t y = static_cast<int64_t>(label[s]);
    if (y == ignore_index) continue;
    const double g = load_as<double>(grad[per_sample ? s : 0]);
    dx[((s / inner) * C + y) * inner + s % inner] = store_as<D>(-g * scale);
  }
}

// Labels scanned into the workspace's first bytes; raises as the reference's read_labels.
template <typename L>
LabelStats check_nll_labels(const KernelContext& ctx, const Tensor& label, int64_t C, int64_t ignore_index, void* ws,
                            const char* op) {
  const LabelStats host = scan_labels<L>(ctx, label, C, ignore_index, static_cast<LabelStats*>(ws), op);
  PD_CHECK(host.bad_index < 0, ErrorCode::kOutOfRange,
           "{}: label {} (at index {} of 'label') is out of range [0, {}) for C = {} classes (ignore_index is {})", op,
           host.bad_value, host.bad_index, C, C, ignore_index);
  return host;
}

}  // namespace

template <typename T>
void mse_loss(const KernelContext& ctx, const Tensor& x, const Tensor& y, const std::string& reduction, Tensor& out) {
  const Reduction red = parse_reduction(reduction, "mse_loss");
  double* partial = static_cast<double*>(workspace(ctx, kLossBlocks * sizeof(double)));
  reduce_losses<T>(ctx, "mse_loss kernel launch", x.numel(), red, MseLoss<dev_t<T>>{dptr<T>(x), dptr<T>(y)},
                   static_cast<double>(x.numel()), out, partial);
}

template <typename T>
void binary_cross_entropy_with_logits(const KernelContext& ctx, const Tensor& x, const Tensor& y, const Tensor& pos_weight,
                                      const std::string& reduction, Tensor& out) {
  const char* op = "binary_cross_entropy_with_logits";
  const Reduction red = parse_reduction(reduction, op);
  const BceLoss<dev_t<T>> f{dptr<T>(x), dptr<T>(y), pos_weight_of<T>(x, pos_weight, op)};
  double* partial = static_cast<double*>(workspace(ctx, kLossBlocks * sizeof(double)));
  reduce_losses<T>(ctx, "binary_cross_entropy_with_logits kernel launch", x.numel(), red, f, static_cast<double>(x.numel()),
                   out, partial);
}

template <typename T>
void bce_with_logits_grad(const KernelContext& ctx, const Tensor& x, const Tensor& y, const Tensor& grad,
                          const Tensor& pos_weight, const std::string& reduction, Tensor& dx, Tensor& dy, Tensor& dpos_weight) {
  using D = dev_t<T>;
  const char* op = "bce_with_logits_grad";
  const Reduction red = parse_reduction(reduction, op);
  const int64_t n = x.numel();
  const double scale = red == Reduction::kMean ? 1.0 / static_cast<double>(n) : 1.0;
  const PosWeight<D> pw = pos_weight_of<T>(x, pos_weight, op);
  const bool want_dpw = pos_weight.defined() && dpos_weight.defined() && dpos_weight.numel() > 0;
  double* contrib = want_dpw && n > 0 ? static_cast<double*>(workspace(ctx, static_cast<size_t>(n) * sizeof(double))) : nullptr;
  cudaStream_t stream = stream_of(ctx);
  if (n > 0) {
    bce_grad_kernel<D><<<blocks_for(n), kThreads, 0, stream>>>(dptr<T>(x), dptr<T>(y), dptr<T>(grad), pw, dptr<T>(dx),
                                                               dptr<T>(dy), contrib, n, red == Reduction::kNone, scale);
    PD_CUDA_CHECK_LAUNCH("bce_with_logits_grad");
  }
  if (!want_dpw) return;
  // The axes pos_weight is broadcast over: x's extra leading dims and those where it has extent 1.
  const Shape& xs = x.shape();
  const Shape& ws = pos_weight.shape();
  const int64_t lead = x.dim() - pos_weight.dim();
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d < lead || (ws[d - lead] == 1 && xs[d] != 1)) axes.push_back(d);
  if (axes.empty()) {  // one weight per element (an empty list would mean "all axes" to the plan)
    const SumGroup<D> f{contrib, dptr<T>(dpos_weight)};
    cpu::ReducePlan p;  // every element its own group of one
    p.out_numel = n;
    p.kept_shape = {n};
    p.kept_strides = {1};
    launch_groups_as<1>(ctx, f, group_geometry(p, op), "bce_with_logits_grad kernel launch");
    return;
  }
  const GroupGeometry g = group_geometry(cpu::make_reduce_plan(xs, axes, op), op);
  launch_groups(ctx, SumGroup<D>{contrib, dptr<T>(dpos_weight)}, g, "bce_with_logits_grad kernel launch");
}

template <typename T>
void nll_loss(const KernelContext& ctx, const Tensor& x, const Tensor& label, int64_t ignore_index, const std::string& reduction,
              Tensor& out) {
  const char* op = "nll_loss";
  const Reduction red = parse_reduction(reduction, op);
  const NllView v = nll_view(x);
  char* ws = static_cast<char*>(workspace(ctx, kPartialOffset + kLossBlocks * sizeof(double)));
  visit_label(label, op, [&]<typename L>() {
    const LabelStats host = check_nll_labels<L>(ctx, label, v.C, ignore_index, ws, op);
    const NllLoss<dev_t<T>, L> f{dptr<T>(x), reinterpret_cast<const L*>(label.raw_data()), v.C, v.inner, ignore_index};
    reduce_losses<T>(ctx, "nll_loss kernel launch", v.outer * v.inner, red, f, static_cast<double>(host.count), out,
                     reinterpret_cast<double*>(ws + kPartialOffset));
  });
}

template <typename T>
void nll_loss_grad(const KernelContext& ctx, const Tensor& x, const Tensor& label, const Tensor& grad, int64_t ignore_index,
                   const std::string& reduction, Tensor& dx) {
  const char* op = "nll_loss_grad";
  const Reduction red = parse_reduction(reduction, op);
  const NllView v = nll_view(x);
  void* ws = workspace(ctx, sizeof(LabelStats));
  visit_label(label, op, [&]<typename L>() {
    const LabelStats host = check_nll_labels<L>(ctx, label, v.C, ignore_index, ws, op);
    const int64_t n = dx.numel(), samples = v.outer * v.inner;
    if (n == 0) return;
    cudaStream_t stream = stream_of(ctx);
    PD_CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, static_cast<size_t>(n) * sizeof(T), stream));
    if (samples == 0) return;
    const double scale = red == Reduction::kMean ? 1.0 / static_cast<double>(host.count) : 1.0;
    nll_grad_kernel<dev_t<T>, L><<<blocks_for(samples), kThreads, 0, stream>>>(
        reinterpret_cast<const L*>(label.raw_data()), dptr<T>(grad), dptr<T>(dx), samples, v.C, v.inner, ignore_index,
        red == Reduction::kNone, scale);
    PD_CUDA_CHECK_LAUNCH("nll_loss_grad");
  });
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(mse_loss, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(binary_cross_entropy_with_logits, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(bce_with_logits_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(nll_loss, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(nll_loss_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
