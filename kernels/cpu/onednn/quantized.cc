// quantized_conv2d and quantized_linear on oneDNN's int8 convolution and matmul primitives: u8 / s8
// activations with their zero point, s8 weights reordered once into the primitive's blocked layout,
// and the whole epilogue fused: per-channel output scales, bias, residual (sum post-op), activation
// and requantization (an eltwise scale by 1 / out_scale and the destination zero point). An int8
// residual of an int8 result is copied into the destination as it is and read back by the sum post-op
// with its own scale and zero point, so a residual block stays in int8 from end to end.
//
// oneDNN 2.x computes dst = output_scale[c] * (acc + bias[c]) (bias in accumulator units), so the
// kernel passes bias / output_scale. Scales are baked into the primitive (its jit code has no runtime
// per-channel scales), so the cache key carries a hash of them.
//
// Without VNNI, oneDNN multiplies u8 by s8 with vpmaddubsw, whose 16-bit sums of two products saturate
// once both operands are large (255 * 127 * 2 > 32767). For u8 activations, weights beyond 7 bits
// (|w| > 64) then go in halved (rounded half to even, scale doubled): 255 * 64 * 2 fits. Weights
// quantized at 7 bits (pd-quant --reduce-range) go in as they are and stay exact. s8 activations go in
// shifted to u8 there (x + 128, zero point + 128): oneDNN's own s8 path halves every weight.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>

#include "cpu/common/parallel.h"
#include "cpu/onednn/conv_geometry.h"
#include "cpu/onednn/matmul_common.h"
#include "cpu/ref/quantized_direct.h"
#include "elementwise_ops.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::onednn {
namespace {

dt onednn_dtype(DType d) { return d == DType::u8 ? dt::u8 : d == DType::i8 ? dt::s8 : dt::f32; }

// The scales and zero points of one call, in oneDNN's terms.
struct Int8Params {
  std::vector<float> output_scales;  // x_scale * weight_scale[c] (doubled for 7-bit weights)
  std::vector<float> bias;           // bias[c] / output_scales[c]; empty without a bias
  int32_t x_zero_point = 0;
  float inv_out_scale = 1.0f;  // 1 / out_scale for an int8 output
  int32_t out_zero_point = 0;
  bool seven_bit = false;
  // The residual, in the sum post-op's terms: real = residual_scale * (r - residual_zero_point).
  bool residual = false;
  DType residual_dtype = DType::f32;
  float residual_scale = 1.0f;
  int32_t residual_zero_point = 0;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of everything baked into the primitive

  void mix(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) hash = (hash ^ b[i]) * 1099511628211ull;
  }
};

// Whether some weight lies beyond 7 bits (|w| > 64); remembered in ctx.packed for a constant weight.
bool beyond_seven_bits(const KernelContext& ctx, const Tensor& weight) {
  const auto scan = [&] {
    const int8_t* w = weight.data<int8_t>();
    return std::any_of(w, w + weight.numel(), [](int8_t v) { return v > 64 || v < -64; });
  };
  if (!ctx.packed || !ctx.packed->is_constant(weight)) return scan();
  const std::string key = fmt::format("int8:beyond7:{}:{}", static_cast<const void*>(weight.storage().get()), weight.offset());
  if (std::shared_ptr<void> hit = ctx.packed->find(key)) return *static_cast<bool*>(hit.get());
  const bool beyond = scan();
  ctx.packed->store(key, std::make_shared<bool>(beyond));
  return beyond;
}

// The activation as the primitive reads it, with its zero point: as it is, or shifted from s8 to u8
// where the CPU lacks VNNI.
struct Int8Source {
  Tensor x;
  int32_t zero_point;
};

Int8Source int8_source(const Tensor& x, const Tensor& x_zero_point) {
  if (x.dtype() == DType::u8) return {x, int32_t{x_zero_point.item<uint8_t>()}};
  const int32_t zp = x_zero_point.item<int8_t>();
  if (cpu_has_vnni()) return {x, zp};
  Tensor shifted = Tensor::empty(x.shape(), DType::u8);
  const auto* from = static_cast<const uint8_t*>(x.raw_data());
  uint8_t* to = shifted.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) to[i] = from[i] ^ 0x80;  // two's complement v -> v + 128
  return {shifted, zp + 128};
}

Int8Params int8_params(const KernelContext& ctx, const Int8Source& src, const Tensor& x_scale, const Tensor& weight,
                       const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                       const Tensor& out_zero_point, DType out_dtype) {
  Int8Params p;
  const int64_t channels = weight.shape()[0];
  p.seven_bit = src.x.dtype() == DType::u8 && !cpu_has_vnni() && beyond_seven_bits(ctx, weight);
  const double xs = x_scale.item<float>(), factor = p.seven_bit ? 2.0 : 1.0;
  const float* ws = weight_scale.data<float>();
  p.output_scales.resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    p.output_scales[c] = static_cast<float>(xs * ws[weight_scale.dim() == 1 ? c : 0] * factor);
  if (bias.defined()) {
    const float* b = bias.data<float>();
    for (int64_t c = 0; c < channels; ++c) p.bias.push_back(b[c] / p.output_scales[c]);
  }
  p.x_zero_point = src.zero_point;
  if (out_dtype != DType::f32) {
    p.inv_out_scale = 1.0f / out_scale.item<float>();
    p.out_zero_point = out_dtype == DType::u8 ? int32_t{out_zero_point.item<uint8_t>()} : int32_t{out_zero_point.item<int8_t>()};
  }
  p.mix(p.output_scales.data(), p.output_scales.size() * sizeof(float));
  p.mix(&p.inv_out_scale, sizeof(float));
  p.mix(&p.seven_bit, sizeof(bool));
  return p;
}

// The residual's terms in `p` (mixed into its hash: the sum post-op bakes them in). An int8 residual
// of an f32 result is dequantized here into `widened` (the f32 sum adds real values).
const Tensor& residual_terms(Int8Params& p, const Tensor& residual, const Tensor& scale, const Tensor& zero_point,
                             DType out_dtype, Tensor& widened) {
  if (!residual.defined()) return residual;
  p.residual = true;
  if (residual.dtype() == DType::f32) return residual;
  const float rs = scale.item<float>();
  const bool u8 = residual.dtype() == DType::u8;
  const int32_t zp = u8 ? int32_t{zero_point.item<uint8_t>()} : int32_t{zero_point.item<int8_t>()};
  if (out_dtype == DType::f32) {
    widened = Tensor::empty(residual.shape(), DType::f32);
    float* to = widened.data<float>();
    const int64_t n = residual.numel(), block = 4096;
    const auto widen = [&](const auto* from) {  // one loop per dtype, so that it vectorises
      const auto zpf = static_cast<float>(zp);
      cpu::parallel_for((n + block - 1) / block, block, [&](int64_t b) {
        for (int64_t i = b * block, end = std::min(n, (b + 1) * block); i < end; ++i)
          to[i] = (static_cast<float>(from[i]) - zpf) * rs;
      });
    };
    if (u8) widen(residual.data<uint8_t>());
    else widen(residual.data<int8_t>());
    return widened;
  }
  p.residual_dtype = residual.dtype();
  p.residual_scale = rs;
  p.residual_zero_point = zp;
  p.mix(&p.residual_dtype, sizeof(DType));
  p.mix(&p.residual_scale, sizeof(float));
  p.mix(&p.residual_zero_point, sizeof(int32_t));
  return residual;
}

// Copies `bytes` from `from` to `to`, split across the threads when it is large (a residual of a
// batch of 64 is megabytes, which one thread copies at a fraction of the memory bandwidth).
void copy_across_threads(void* to, const void* from, size_t bytes) {
  const size_t chunk = size_t{1} << 18;
  const auto n = static_cast<int64_t>((bytes + chunk - 1) / chunk);
  cpu::parallel_for(n, int64_t{1} << 15, [&](int64_t i) {
    const size_t begin = static_cast<size_t>(i) * chunk;
    std::memcpy(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin, std::min(chunk, bytes - begin));
  });
}

// Bands of output rows, each run as its own single-threaded primitive, one per thread, for a batch of 1
// in NHWC: oneDNN's int8 convolutions barely gain from a second thread there (host B: a 28x28 32 -> 32
// conv 15.7 us on one thread, 12.5 on two; a 1x1 one 2.4 -> 7.9 us), while two halves of the rows run
// side by side. Band t reads input rows [in0, in1) with pad_top rows of padding above. Otherwise one
// band, the whole output, and oneDNN's own threading.
struct RowBand {
  int64_t r0, r1, in0, in1, pad_top;
};

std::vector<RowBand> row_bands(const Shape& x, const Shape& w, const Shape& y, const std::vector<int64_t>& stride,
                               const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                               bool channels_last, int threads) {
  const int64_t H = x[2], OH = y[2], KH = w[2];
  const std::vector<RowBand> whole = {{0, OH, 0, H, padding[0]}};
  if (!channels_last || x[0] != 1 || threads < 2 || OH < 2 * threads) return whole;
  std::vector<RowBand> bands;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t r0 = OH * t / threads, r1 = OH * (t + 1) / threads;
    const int64_t first = r0 * stride[0] - padding[0], last = (r1 - 1) * stride[0] - padding[0] + (KH - 1) * dilation[0];
    const RowBand b{r0, r1, std::max<int64_t>(first, 0), std::min(last + 1, H), std::max<int64_t>(-first, 0)};
    if (b.in1 <= b.in0) return whole;  // a band inside the padding
    bands.push_back(b);
  }
  return bands;
}

using Launch = std::pair<dnnl::primitive, std::unordered_map<int, dnnl::memory>>;

// Runs the primitives, one per thread when there are several: inside an OpenMP parallel region oneDNN
// runs each on its calling thread alone.
void run_concurrently(std::vector<Launch>& launches) {
  if (launches.size() == 1) return launches[0].first.execute(cpu_stream(), launches[0].second);
  std::exception_ptr failure;
  const int n = static_cast<int>(launches.size());
#pragma omp parallel for num_threads(n) schedule(static, 1)
  for (int i = 0; i < n; ++i) {
    try {
      launches[i].first.execute(cpu_stream(), launches[i].second);
      cpu_stream().wait();
    } catch (...) {
#pragma omp critical(pd_quantized_conv2d_bands)
      failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// Output scales (per channel: mask `channel_mask`), zero points, and the post-ops: the residual sum,
// then the activation in real units, scaled by 1 / out_scale for an int8 output. Nothing when oneDNN
// has no exact form of the activation; the caller runs the reference kernel.
std::optional<dnnl::primitive_attr> int8_attr(const Int8Params& p, int channel_mask, Activation act, double alpha,
                                              DType out_dtype) {
  using alg = dnnl::algorithm;
  dnnl::primitive_attr attr = user_scratchpad();
  attr.set_output_scales(channel_mask, p.output_scales);
  if (p.x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (out_dtype != DType::f32 && p.out_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  dnnl::post_ops ops;
  if (p.residual && p.residual_dtype == DType::f32) ops.append_sum(1.0f);
  if (p.residual && p.residual_dtype != DType::f32)
    ops.append_sum(p.residual_scale, p.residual_zero_point, onednn_dtype(p.residual_dtype));
  const float scale = p.inv_out_scale;
  switch (act) {
    case Activation::none:
      if (out_dtype != DType::f32) ops.append_eltwise(1.0f, alg::eltwise_linear, scale, 0.0f);
      break;
    case Activation::relu: ops.append_eltwise(scale, alg::eltwise_relu, 0.0f, 0.0f); break;
    case Activation::leaky_relu: ops.append_eltwise(scale, alg::eltwise_relu, static_cast<float>(alpha), 0.0f); break;
    case Activation::gelu: ops.append_eltwise(scale, alg::eltwise_gelu_erf, 0.0f, 0.0f); break;
    case Activation::silu: ops.append_eltwise(scale, alg::eltwise_swish, 1.0f, 0.0f); break;
    case Activation::tanh: ops.append_eltwise(scale, alg::eltwise_tanh, 0.0f, 0.0f); break;
    case Activation::sigmoid: ops.append_eltwise(scale, alg::eltwise_logistic, 0.0f, 0.0f); break;
    default: return std::nullopt;
  }
  attr.set_post_ops(ops);
  return attr;
}

dnnl::memory wrap_any(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, cpu_engine(), t.raw_data());
}

// The i8 weight as the primitive reads it (7-bit when p.seven_bit), reordered once and kept in
// ctx.packed when the weight is a constant. `keep` holds a halved copy alive until the call ends.
dnnl::memory int8_weights(const KernelContext& ctx, const OptionalReorder& r, const dnnl::memory::desc& plain,
                          const Tensor& weight, const Int8Params& p, const std::string& key, Tensor& keep) {
  return weights_in(
      ctx.packed, r, weight,
      [&] {
        if (!p.seven_bit) return wrap_any(plain, weight);
        keep = Tensor::empty(weight.shape(), DType::i8);
        const int8_t* w = weight.data<int8_t>();
        int8_t* h = keep.data<int8_t>();
        for (int64_t i = 0; i < weight.numel(); ++i) h[i] = static_cast<int8_t>(std::nearbyint(w[i] * 0.5f));
        return wrap_any(plain, keep);
      },
      key);
}

// The runtime zero points the attributes asked for.
void add_zero_points(std::unordered_map<int, dnnl::memory>& args, const Int8Params& p, DType out_dtype, int32_t* storage) {
  storage[0] = p.x_zero_point;
  storage[1] = p.out_zero_point;
  const dnnl::memory::desc one({1}, dt::s32, tag::x);
  if (p.x_zero_point != 0) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, dnnl::memory(one, cpu_engine(), storage));
  if (out_dtype != DType::f32 && p.out_zero_point != 0)
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, dnnl::memory(one, cpu_engine(), storage + 1));
}

}  // namespace

template <typename T>
void quantized_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                      const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                      const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                      const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                      const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                      bool channels_last, DType out_dtype, Tensor& out) {
  const Activation act = parse_activation("quantized_conv2d", activation);
  if (out.numel() == 0) return;
  if (reference::quantized_conv2d_direct(ctx, !cpu_has_vnni() && beyond_seven_bits(ctx, weight), x, x_scale, x_zero_point, weight, weight_scale, bias, residual, out_scale,
                                         out_zero_point, stride, padding, dilation, groups, activation, alpha, channels_last,
                                         out_dtype, out))
    return;
  const Int8Source src = int8_source(x, x_zero_point);
  Int8Params p = int8_params(ctx, src, x_scale, weight, weight_scale, bias, out_scale, out_zero_point, out_dtype);
  Tensor widened;
  const Tensor& res = residual_terms(p, residual, residual_scale, residual_zero_point, out_dtype, widened);
  const auto attr = int8_attr(p, 1 << 1, act, alpha, out_dtype);
  if (!attr)
    return reference::quantized_conv2d<T>(ctx, x, x_scale, x_zero_point, weight, weight_scale, bias, residual, residual_scale,
                                          residual_zero_point, out_scale, out_zero_point, stride, padding, dilation, groups,
                                          activation, alpha, channels_last, out_dtype, out);
  guarded("quantized_conv2d", [&] {
    const auto nchw = [&](const Shape& s) { return channels_last ? Shape{s[0], s[3], s[1], s[2]} : s; };
    const dt src_dt = onednn_dtype(src.x.dtype()), dst_dt = onednn_dtype(out_dtype);
    // The user's activations as they are in memory: oneDNN's dims are always N, C, H, W.
    const auto plain = [&](const dims& d, dt type) { return dnnl::memory::desc(d, type, channels_last ? tag::nhwc : tag::nchw); };
    const bool int8_sum = p.residual && p.residual_dtype != DType::f32;
    int32_t zero_points[2];
    Tensor keep;
    // One primitive per band of output rows (one band but at batch 1: see row_bands), its arguments
    // made here, on the calling thread (scratch buffers, weight reorders), and run below.
    std::vector<Launch> launches;
    const Shape xs = nchw(x.shape()), ys = nchw(out.shape());
    for (const RowBand& b : row_bands(xs, weight.shape(), ys, stride, padding, dilation, channels_last, ctx.threads)) {
      const ConvGeometry g({xs[0], xs[1], b.in1 - b.in0, xs[3]}, weight.shape(), {ys[0], ys[1], b.r1 - b.r0, ys[3]}, stride,
                           {b.pad_top, padding[1]}, dilation, groups);
      const dnnl::memory::desc plain_wei(g.wei, dt::s8, groups > 1 ? tag::goihw : tag::oihw);
      const std::string key = fmt::format("{}:{}:{}:{}:{}:{}:{}:{}:{}:{:x}", g.key("quantized_conv2d", bias.defined()),
                                          static_cast<int>(src_dt), static_cast<int>(dst_dt), p.residual, activation,
                                          alpha, p.x_zero_point != 0, p.out_zero_point != 0, channels_last, p.hash);
      auto e = cached<ConvEntry>(key, [&] {
        // channels_last asks for the user's NHWC itself (every int8 implementation reads it): no reorders.
        // An int8 residual goes into the destination byte for byte, so that must be the user's layout too.
        const tag act_tag = channels_last ? tag::nhwc : tag::any;
        const dnnl::memory::desc any_src(g.src, src_dt, act_tag), any_wei(g.wei, dt::s8, tag::any),
            any_dst(g.dst, dst_dt, int8_sum && !channels_last ? tag::nchw : act_tag);
        const auto d = bias.defined()
                           ? conv_fwd::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_src,
                                            any_wei, plain_desc(dims{g.dst[1]}), any_dst, g.strides, g.dilates, g.pad_l, g.pad_r)
                           : conv_fwd::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_src,
                                            any_wei, any_dst, g.strides, g.dilates, g.pad_l, g.pad_r);
        const conv_fwd::primitive_desc pd(d, *attr, cpu_engine());
        return ConvEntry{conv_fwd(pd), OptionalReorder::make(plain(g.src, src_dt), pd.src_desc()),
                         OptionalReorder::make(plain_wei, pd.weights_desc()),
                         OptionalReorder::make(pd.dst_desc(), plain(g.dst, dst_dt)), pd.scratchpad_desc(),
                         p.residual && !int8_sum ? OptionalReorder::make(plain(g.dst, dt::f32), pd.dst_desc()) : OptionalReorder{}};
      });
      // A band's rows are contiguous in NHWC at batch 1: its x, residual and result start at its first
      // row (a single band starts at row 0, whatever the layout).
      const int64_t out_row = ys[1] * ys[3], x_row = xs[1] * xs[3];  // elements per row
      char* out_base = static_cast<char*>(out.raw_data()) + b.r0 * out_row * dtype_size(out_dtype);
      const char* x_base = static_cast<const char*>(src.x.raw_data()) + b.in0 * x_row * dtype_size(src.x.dtype());
      dnnl::memory user_dst(plain(g.dst, dst_dt), cpu_engine(), out_base);
      dnnl::memory dst = output_buffer(e->out, user_dst);
      if (res.defined()) {
        const size_t r_row = static_cast<size_t>(out_row) * dtype_size(res.dtype());
        const char* r_base = static_cast<const char*>(res.raw_data()) + b.r0 * r_row;
        if (e->residual_in.prim) {
          dnnl::memory r(plain(g.dst, dt::f32), cpu_engine(), const_cast<char*>(r_base));
          e->residual_in.prim->execute(cpu_stream(), r, dst);
        } else {
          copy_across_threads(out_base, r_base, static_cast<size_t>(ys[0] * (b.r1 - b.r0)) * r_row);  // several bands: ys[0] = 1
        }
      }
      std::unordered_map<int, dnnl::memory> args{
          {DNNL_ARG_SRC, reorder_in(e->in0, dnnl::memory(plain(g.src, src_dt), cpu_engine(), const_cast<char*>(x_base)))},
          {DNNL_ARG_WEIGHTS, int8_weights(ctx, e->in1, plain_wei, weight, p, key, keep)},
          {DNNL_ARG_DST, dst},
          {DNNL_ARG_SCRATCHPAD, scratch_memory(e->scratchpad)}};
      if (bias.defined())
        args.emplace(DNNL_ARG_BIAS, dnnl::memory(plain_desc(dims{g.dst[1]}), cpu_engine(), const_cast<float*>(p.bias.data())));
      add_zero_points(args, p, out_dtype, zero_points);
      if (e->out.prim) {  // a layout of the primitive's own: one band (row_bands gives several only in NHWC)
        e->prim.execute(cpu_stream(), args);
        reorder_out(e->out, dst, user_dst);
        return;
      }
      launches.emplace_back(e->prim, std::move(args));
    }
    run_concurrently(launches);
  });
}

template <typename T>
void quantized_linear(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                      const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                      const Tensor& out_zero_point, const std::string& activation, double alpha, DType out_dtype,
                      Tensor& out) {
  const Activation act = parse_activation("quantized_linear", activation);
  if (out.numel() == 0) return;
  if (reference::quantized_linear_direct(ctx, !cpu_has_vnni() && beyond_seven_bits(ctx, weight), x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point,
                                         activation, alpha, out_dtype, out))
    return;
  const int64_t out_f = weight.shape()[0], in = weight.shape()[1], m = out.numel() / out_f;
  const Int8Source src = int8_source(x, x_zero_point);
  const Int8Params p = int8_params(ctx, src, x_scale, weight, weight_scale, bias, out_scale, out_zero_point, out_dtype);
  const auto attr = int8_attr(p, 1 << 1, act, alpha, out_dtype);
  if (!attr || in == 0)
    return reference::quantized_linear<T>(ctx, x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale,
                                          out_zero_point, activation, alpha, out_dtype, out);
  guarded("quantized_linear", [&] {
    const dt src_dt = onednn_dtype(src.x.dtype()), dst_dt = onednn_dtype(out_dtype);
    // weight [out_f, in] read as its transpose [in, out_f]; the primitive picks its own packed layout.
    const dnnl::memory::desc src_md(dims{m, in}, src_dt, tag::ab), plain_wei(dims{in, out_f}, dt::s8, tag::ba),
        any_wei(dims{in, out_f}, dt::s8, tag::any), dst(dims{m, out_f}, dst_dt, tag::ab), bmd = plain_desc(dims{1, out_f});
    const std::string key = fmt::format("quantized_linear:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{:x}", m, in, out_f, bias.defined(),
                                        static_cast<int>(src_dt), static_cast<int>(dst_dt), activation, alpha,
                                        p.x_zero_point != 0, p.out_zero_point != 0, p.hash);
    struct Entry {
      dnnl::matmul prim;
      OptionalReorder wei;
      dnnl::memory::desc scratchpad;
    };
    auto e = cached<Entry>(key, [&] {
      const auto desc = bias.defined() ? dnnl::matmul::desc(src_md, any_wei, bmd, dst) : dnnl::matmul::desc(src_md, any_wei, dst);
      const dnnl::matmul::primitive_desc pd(desc, *attr, cpu_engine());
      return Entry{dnnl::matmul(pd), OptionalReorder::make(plain_wei, pd.weights_desc()), pd.scratchpad_desc()};
    });
    Tensor keep;
    int32_t zero_points[2];
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap_any(src_md, src.x)},
                                               {DNNL_ARG_WEIGHTS, int8_weights(ctx, e->wei, plain_wei, weight, p, key, keep)},
                                               {DNNL_ARG_DST, wrap_any(dst, out)},
                                               {DNNL_ARG_SCRATCHPAD, scratch_memory(e->scratchpad)}};
    if (bias.defined()) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bmd, cpu_engine(), const_cast<float*>(p.bias.data())));
    add_zero_points(args, p, out_dtype, zero_points);
    e->prim.execute(cpu_stream(), args);
  });
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(quantized_conv2d, onednn, uint8_t, int8_t)
PD_INSTANTIATE_KERNELS(quantized_linear, onednn, uint8_t, int8_t)
