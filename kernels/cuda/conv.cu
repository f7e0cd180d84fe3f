// conv2d and its gradients on CUDA through cuDNN's legacy convolution API (NCHW, cross-correlation,
// symmetric padding, dilation, groups), with the semantics of kernels/cpu/ref/conv.cc; the bias is
// added by a small kernel after the convolution, as the reference does. channels_last tensors are
// described to cuDNN as NHWC (the filter stays KCRS).
//
// Precision: f32 runs with CUDNN_FMA_MATH (no TF32 tensor cores, which CUDNN_DEFAULT_MATH allows on
// Ampere and later), f64 in double (default math); f16 / bf16 accumulate in float (pseudo-half) with
// tensor cores.
// Algorithm: cuDNN's ranking (cudnnFind* by measured time, or cudnnGet*Algorithm_v7's heuristics: see
// find_mode), taking the first algorithm that is supported, of an allowed math type and within the
// workspace cap (and deterministic under `deterministic: true`); the choice is cached per device,
// dtype, direction, geometry and that switch.
#include <array>
#include <cstdlib>
#include <string>
#include <map>
#include <mutex>
#include <optional>

#include "cuda/cuda_common.cuh"
#include "pd/kernels/spatial_arg.h"
#include "pd/core/determinism.h"

namespace pd::kernels::cuda {
namespace {

// x [N, C, H, W], w [K, C / groups, kH, kW], y [N, K, oH, oW]; with nhwc, x and y are [N, H, W, C] in
// memory (the extents here are still N, C, H, W).
struct ConvGeom {
  int64_t N, C, H, W, K, Cg, kH, kW, oH, oW, ph, pw, sh, sw, dh, dw, groups;
  bool nhwc;
};

Shape nchw_extents(const Shape& s, bool nhwc) { return nhwc ? Shape{s[0], s[3], s[1], s[2]} : s; }

ConvGeom make_geom(const Shape& x_shape, const Shape& w, const Shape& y_shape, const std::vector<int64_t>& stride,
                   const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, bool nhwc) {
  PD_CHECK(groups > 0, ErrorCode::kInvalidArgument, "conv2d: argument 'groups' must be positive, but received {}",
           groups);
  const Shape x = nchw_extents(x_shape, nhwc), y = nchw_extents(y_shape, nhwc);
  ConvGeom g{x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3], y[2], y[3],
             spatial_arg(padding, 0, 0), spatial_arg(padding, 1, 0), spatial_arg(stride, 0, 1), spatial_arg(stride, 1, 1),
             spatial_arg(dilation, 0, 1), spatial_arg(dilation, 1, 1), groups, nhwc};
  for (int64_t v : {g.N, g.C, g.H, g.W, g.K, g.Cg, g.kH, g.kW, g.oH, g.oW, g.ph, g.pw, g.sh, g.sw, g.dh, g.dw, g.groups})
    PD_CHECK(v <= 0x7fffffffLL, ErrorCode::kNotImplemented, "conv2d on CUDA: a dimension or attribute {} beyond int",
             v);
  return g;
}

template <typename T> struct CudnnType;
template <> struct CudnnType<float> {
  static constexpr cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  static constexpr cudnnMathType_t math = CUDNN_FMA_MATH;
  using scale = float;
};
template <> struct CudnnType<double> {
  static constexpr cudnnDataType_t data = CUDNN_DATA_DOUBLE, compute = CUDNN_DATA_DOUBLE;
  static constexpr cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // FP64 tensor cores are full double precision
  using scale = double;
};
template <> struct CudnnType<::pd::float16> {
  static constexpr cudnnDataType_t data = CUDNN_DATA_HALF, compute = CUDNN_DATA_FLOAT;
  static constexpr cudnnMathType_t math = CUDNN_TENSOR_OP_MATH;
  using scale = float;
};
template <> struct CudnnType<::pd::bfloat16> {
  static constexpr cudnnDataType_t data = CUDNN_DATA_BFLOAT16, compute = CUDNN_DATA_FLOAT;
  static constexpr cudnnMathType_t math = CUDNN_TENSOR_OP_MATH;
  using scale = float;
};

// The descriptors of one convolution, destroyed with it.
struct ConvDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  ConvDescs(const ConvGeom& g, cudnnDataType_t data, cudnnDataType_t compute, cudnnMathType_t math) {
    PD_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    PD_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    PD_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    PD_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    const cudnnTensorFormat_t layout = g.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    PD_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, layout, data, i(g.N), i(g.C), i(g.H), i(g.W)));
    PD_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, layout, data, i(g.N), i(g.K), i(g.oH), i(g.oW)));
    PD_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, data, CUDNN_TENSOR_NCHW, i(g.K), i(g.Cg), i(g.kH), i(g.kW)));
    PD_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, i(g.ph), i(g.pw), i(g.sh), i(g.sw), i(g.dh), i(g.dw),
                                                   CUDNN_CROSS_CORRELATION, compute));
    PD_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, i(g.groups)));
    PD_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math));
  }
  ~ConvDescs() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  ConvDescs(const ConvDescs&) = delete;
  ConvDescs& operator=(const ConvDescs&) = delete;
};

enum class Direction { kForward, kBackwardData, kBackwardFilter };

struct Choice {
  int algo = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

using ChoiceKey = std::array<int64_t, 22>;

ChoiceKey key_of(int device, cudnnDataType_t data, Direction dir, const ConvGeom& g, bool only_deterministic) {
  return {device, static_cast<int64_t>(data), static_cast<int64_t>(dir), g.N, g.C, g.H, g.W, g.K, g.Cg, g.kH, g.kW,
          g.oH, g.oW, g.ph, g.pw, g.sh, g.sw, g.dh, g.dw, g.groups, g.nhwc ? 1 : 0, only_deterministic ? 1 : 0};
}

std::mutex& choice_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<ChoiceKey, std::optional<Choice>>& choice_cache() {
  static auto* cache = new std::map<ChoiceKey, std::optional<Choice>>();
  return *cache;
}

// Algorithms needing more scratch than this are passed over (unless nothing else is supported).
constexpr size_t kWorkspaceCap = size_t(1) << 30;

// Whether an algorithm's reported math type keeps the precision asked for: f32 / f64 must not run on
// TF32 (or reduced-precision) tensor cores.
bool math_allowed(cudnnMathType_t requested, cudnnMathType_t reported) {
  if (requested != CUDNN_FMA_MATH) return true;
  return reported != CUDNN_TENSOR_OP_MATH && reported != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// The workspace algorithm `algo` needs in direction `dir`, or false if cuDNN does not support it here.
bool workspace_size(cudnnHandle_t h, const ConvDescs& d, Direction dir, int algo, size_t& bytes) {
  cudnnStatus_t st;
  switch (dir) {
    case Direction::kForward:
      st = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                   &bytes);
      break;
    case Direction::kBackwardData:
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x,
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes);
      break;
    default:
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w,
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &bytes);
      break;
  }
  return st == CUDNN_STATUS_SUCCESS;
}

// cuDNN's ranked candidates for one direction, as (algo, status, math type).
struct Candidate {
  int algo;
  cudnnStatus_t status;
  cudnnMathType_t math;
  bool deterministic;
};

template <typename Perf>
void collect(const Perf* perf, int n, std::vector<Candidate>& out) {
  for (int i = 0; i < n; ++i) out.push_back({static_cast<int>(perf[i].algo), perf[i].status, perf[i].mathType,
                   perf[i].determinism == CUDNN_DETERMINISTIC});
}

// How candidates are ranked: by cuDNN's measured times (cudnnFind*, which runs every algorithm once per
// geometry, as torch.backends.cudnn.benchmark = True does), unless PD_CUDNN_FIND=0 asks for its
// heuristics or `deterministic: true` is on: timings vary between runs, and two deterministic
// algorithms still give different bits, so that switch takes the heuristic's fixed choice. On an H200
// the heuristic's pick for ResNet-50's 3x3 layers took up to 1.8x the fastest's time (docs/cuda.md).
bool find_mode() {
  static const bool allowed = [] {
    const char* v = std::getenv("PD_CUDNN_FIND");
    return v == nullptr || std::string(v) != "0";
  }();
  return allowed && !deterministic();
}

std::vector<Candidate> candidates(cudnnHandle_t h, const ConvDescs& d, Direction dir) {
  std::vector<Candidate> out;
  int n = 0;
  const bool find = find_mode();
  switch (dir) {
    case Direction::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      const int count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
      PD_CUDNN_CHECK(find ? cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, count, &n, perf)
                          : cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, count, &n, perf));
      collect(perf, n, out);
      break;
    }
    case Direction::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      const int count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
      PD_CUDNN_CHECK(find ? cudnnFindConvolutionBackwardDataAlgorithm(h, d.w, d.y, d.conv, d.x, count, &n, perf)
                          : cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, count, &n, perf));
      collect(perf, n, out);
      break;
    }
    default: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      const int count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
      PD_CUDNN_CHECK(find ? cudnnFindConvolutionBackwardFilterAlgorithm(h, d.x, d.y, d.conv, d.w, count, &n, perf)
                          : cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, count, &n, perf));
      collect(perf, n, out);
      break;
    }
  }
  return out;
}

// Algorithms whose intermediates are held in the 16-bit data type (the FFT and non-fused Winograd
// transforms) or that add partial sums with atomics in it (backward ALGO_0): on an H200 cudnnFind chose
// one for a bf16 backward-data convolution that was 10% off the f32 result. f16 / bf16 pass them over.
bool low_precision_algo(Direction dir, int algo) {
  switch (dir) {
    case Direction::kForward:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case Direction::kBackwardData:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    default:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
  }
}

// The cached algorithm for this geometry, chosen on first use (nothing when cuDNN has none). Leaves
// d.conv's math type set to the chosen one.
std::optional<Choice> choose(const KernelContext& ctx, const ConvDescs& d, Direction dir, cudnnDataType_t data,
                             cudnnMathType_t requested, const ConvGeom& g) {
  const bool only_deterministic = deterministic();
  const ChoiceKey key = key_of(ctx.place.index, data, dir, g, only_deterministic);
  {
    std::lock_guard<std::mutex> lock(choice_mutex());
    auto it = choice_cache().find(key);
    if (it != choice_cache().end()) {
      if (it->second) PD_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, it->second->math));
      return it->second;
    }
  }
  cudnnHandle_t h = cudnn_handle(ctx);
  const std::vector<Candidate> cands = candidates(h, d, dir);
  std::optional<Choice> best;
  // First pass: within the workspace cap; second: any size.
  for (int pass = 0; pass < 2 && !best; ++pass)
    for (const Candidate& c : cands) {
      if (c.status != CUDNN_STATUS_SUCCESS || !math_allowed(requested, c.math)) continue;
      if (only_deterministic && !c.deterministic) continue;
      if ((data == CUDNN_DATA_HALF || data == CUDNN_DATA_BFLOAT16) && low_precision_algo(dir, c.algo)) continue;
      // f32 keeps FMA math whatever the heuristic reports; the others take the reported one.
      const cudnnMathType_t math = requested == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : c.math;
      PD_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, math));
      size_t bytes = 0;
      if (!workspace_size(h, d, dir, c.algo, bytes)) continue;
      if (pass == 0 && bytes > kWorkspaceCap) continue;
      best = Choice{c.algo, math, bytes};
      break;
    }
  if (best) PD_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, best->math));
  std::lock_guard<std::mutex> lock(choice_mutex());
  choice_cache().emplace(key, best);
  return best;
}

// Runs one direction on device memory: forward (a = x, b = w, out = y), backward data (a = grad of y,
// b = w, out = dx) or backward filter (a = x, b = grad of y, out = dw). False when cuDNN has no
// algorithm for it.
template <typename T>
bool run_cudnn(const KernelContext& ctx, const ConvGeom& g, Direction dir, const void* a, const void* b, void* out) {
  using CT = CudnnType<T>;
  ConvDescs d(g, CT::data, CT::compute, CT::math);
  const std::optional<Choice> c = choose(ctx, d, dir, CT::data, CT::math, g);
  if (!c) return false;
  void* ws = c->workspace > 0 ? workspace(ctx, c->workspace) : nullptr;
  const typename CT::scale alpha = 1, beta = 0;
  cudnnHandle_t h = cudnn_handle(ctx);
  switch (dir) {
    case Direction::kForward:
      PD_CUDNN_CHECK(cudnnConvolutionForward(h, &alpha, d.x, a, d.w, b, d.conv,
                                             static_cast<cudnnConvolutionFwdAlgo_t>(c->algo), ws, c->workspace, &beta,
                                             d.y, out));
      break;
    case Direction::kBackwardData:
      PD_CUDNN_CHECK(cudnnConvolutionBackwardData(h, &alpha, d.w, b, d.y, a, d.conv,
                                                  static_cast<cudnnConvolutionBwdDataAlgo_t>(c->algo), ws,
                                                  c->workspace, &beta, d.x, out));
      break;
    default:
      PD_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &alpha, d.x, a, d.y, b, d.conv,
                                                    static_cast<cudnnConvolutionBwdFilterAlgo_t>(c->algo), ws,
                                                    c->workspace, &beta, d.w, out));
      break;
  }
  return true;
}

// in [batch, rows, cols] -> out [batch, cols, rows]: NHWC <-> NCHW (rows, cols = P, C or C, P; P = H * W).
template <typename D>
__global__ void swap_last_two_kernel(const D* __restrict__ in, D* __restrict__ out, int64_t rows, int64_t cols,
                                     int64_t n) {
  PD_GRID_STRIDE(i, n) {  // out is [N, cols, rows]
    const int64_t r = i % rows, c = (i / rows) % cols, b = i / (rows * cols);
    out[i] = in[(b * rows + r) * cols + c];
  }
}

template <typename T>
void swap_last_two(const KernelContext& ctx, const void* in, void* out, int64_t batch, int64_t rows, int64_t cols) {
  const int64_t n = batch * rows * cols;
  swap_last_two_kernel<dev_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      static_cast<const dev_t<T>*>(in), static_cast<dev_t<T>*>(out), rows, cols, n);
  PD_CUDA_CHECK_LAUNCH("conv2d layout copy");
}

// One direction of the convolution. cuDNN 9's legacy API has no NHWC algorithm for some directions
// and dtypes (seen on an H200: every backward direction of the f32 and f64 samples, with KCRS
// filters); those run on NCHW copies of the NHWC operands instead.
template <typename T>
void convolve(const KernelContext& ctx, const ConvGeom& g, Direction dir, const Tensor& a, const Tensor& b,
              Tensor& out) {
  if (run_cudnn<T>(ctx, g, dir, a.raw_data(), b.raw_data(), out.raw_data())) return;
  ConvGeom n = g;
  n.nhwc = false;
  PD_CHECK(g.nhwc, ErrorCode::kNotImplemented,
           "conv2d on CUDA: cuDNN has no supported algorithm for input [{}, {}, {}, {}], weight [{}, {}, {}, {}], "
           "groups {} (direction {})",
           g.N, g.C, g.H, g.W, g.K, g.Cg, g.kH, g.kW, g.groups, static_cast<int>(dir));
  const int64_t in_plane = g.H * g.W, out_plane = g.oH * g.oW;
  const auto nchw = [&](const Tensor& t, int64_t channels, int64_t plane) {  // an NHWC operand, copied
    Tensor c = Tensor::empty({g.N, channels, plane}, t.dtype(), ctx.place);
    swap_last_two<T>(ctx, t.raw_data(), c.raw_data(), g.N, plane, channels);  // [N, P, C] -> [N, C, P]
    return c;
  };
  const auto back_to_nhwc = [&](const Tensor& c, int64_t channels, int64_t plane) {
    swap_last_two<T>(ctx, c.raw_data(), out.raw_data(), g.N, channels, plane);  // [N, C, P] -> [N, P, C]
  };
  bool ran = false;
  switch (dir) {
    case Direction::kForward: {
      Tensor x = nchw(a, g.C, in_plane), y = Tensor::empty({g.N, g.K, out_plane}, out.dtype(), ctx.place);
      ran = run_cudnn<T>(ctx, n, dir, x.raw_data(), b.raw_data(), y.raw_data());
      if (ran) back_to_nhwc(y, g.K, out_plane);
      break;
    }
    case Direction::kBackwardData: {
      Tensor dy = nchw(a, g.K, out_plane), dx = Tensor::empty({g.N, g.C, in_plane}, out.dtype(), ctx.place);
      ran = run_cudnn<T>(ctx, n, dir, dy.raw_data(), b.raw_data(), dx.raw_data());
      if (ran) back_to_nhwc(dx, g.C, in_plane);
      break;
    }
    default: {
      Tensor x = nchw(a, g.C, in_plane), dy = nchw(b, g.K, out_plane);
      ran = run_cudnn<T>(ctx, n, dir, x.raw_data(), dy.raw_data(), out.raw_data());
      break;
    }
  }
  PD_CHECK(ran, ErrorCode::kNotImplemented,
           "conv2d on CUDA: cuDNN has no supported algorithm for input [{}, {}, {}, {}], weight [{}, {}, {}, {}], "
           "groups {} (direction {}), in NHWC or NCHW",
           g.N, g.C, g.H, g.W, g.K, g.Cg, g.kH, g.kW, g.groups, static_cast<int>(dir));
}

// plane: the elements between channels (oH * oW; 1 for NHWC).
template <typename D, typename A>
__global__ void add_bias_kernel(D* __restrict__ out, const D* __restrict__ bias, int64_t K, int64_t plane, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const int64_t c = (i / plane) % K;
    out[i] = store_as<D>(load_as<A>(out[i]) + load_as<A>(bias[c]));
  }
}

void zero(const KernelContext& ctx, Tensor& t, size_t elem) {
  PD_CUDA_CHECK(cudaMemsetAsync(t.raw_data(), 0, static_cast<size_t>(t.numel()) * elem, stream_of(ctx)));
}

}  // namespace

template <typename T>
void conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
            const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
            const std::vector<int64_t>& dilation, int64_t groups, bool channels_last, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const ConvGeom g = make_geom(x.shape(), weight.shape(), out.shape(), stride, padding, dilation, groups, channels_last);
  if (x.numel() == 0 || weight.numel() == 0) {  // nothing to sum: cuDNN takes no empty dimensions
    zero(ctx, out, sizeof(T));
  } else {
    convolve<T>(ctx, g, Direction::kForward, x, weight, out);
  }
  if (bias.defined()) {
    add_bias_kernel<dev_t<T>, acc_t<T>>
        <<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(out), dptr<T>(bias), g.K, g.nhwc ? 1 : g.oH * g.oW, n);
    PD_CUDA_CHECK_LAUNCH("conv2d bias");
  }
}

template <typename T>
void conv2d_grad_input(const KernelContext& ctx, const Tensor& grad, const Tensor& weight,
                       const std::vector<int64_t>& input_shape, const std::vector<int64_t>& stride,
                       const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                       bool channels_last, Tensor& dx) {
  if (dx.numel() == 0) return;
  if (grad.numel() == 0 || weight.numel() == 0) {
    zero(ctx, dx, sizeof(T));
    return;
  }
  const ConvGeom g = make_geom(dx.shape(), weight.shape(), grad.shape(), stride, padding, dilation, groups, channels_last);
  convolve<T>(ctx, g, Direction::kBackwardData, grad, weight, dx);
}

template <typename T>
void conv2d_grad_weight(const KernelContext& ctx, const Tensor& grad, const Tensor& x,
                        const std::vector<int64_t>& weight_shape, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                        bool channels_last, Tensor& dw) {
  if (dw.numel() == 0) return;
  if (grad.numel() == 0 || x.numel() == 0) {  // an empty batch: the gradient is 0
    zero(ctx, dw, sizeof(T));
    return;
  }
  const ConvGeom g = make_geom(x.shape(), dw.shape(), grad.shape(), stride, padding, dilation, groups, channels_last);
  convolve<T>(ctx, g, Direction::kBackwardFilter, x, grad, dw);
}

// conv2d_transpose is conv2d's input gradient of x (cuDNN's backward-data convolution), then the bias.
template <typename T>
void conv2d_transpose(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
                      const std::vector<int64_t>& padding, const std::vector<int64_t>& output_padding, const std::vector<int64_t>& dilation,
                      int64_t groups, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  conv2d_grad_input<T>(ctx, x, weight, out.shape(), stride, padding, dilation, groups, false, out);
  if (!bias.defined()) return;
  const Shape& s = out.shape();
  add_bias_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(out), dptr<T>(bias), s[1], s[2] * s[3], n);
  PD_CUDA_CHECK_LAUNCH("conv2d_transpose bias");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(conv2d, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(conv2d_grad_input, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(conv2d_transpose, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(conv2d_grad_weight, cuda, float, double, ::pd::float16, ::pd::bfloat16)
