// quantized_conv2d on oneDNN's int8 convolution primitive: u8 / s8 activations with their zero point,
// s8 weights reordered once into the primitive's blocked layout, and the whole epilogue fused:
// per-channel output scales, bias, residual (sum post-op), activation and requantization
// (quantized_common.h). An int8 residual of an int8 result is copied into the destination as it is and
// read back by the sum post-op with its own scale and zero point, so a residual block stays in int8 from
// end to end. Shapes oneDNN serves badly go to the direct kernels (cpu/ref/quantized_direct.h): few input
// channels to the direct convolution, a 1x1 convolution into few pixels to the direct linear kernel.
#include <algorithm>
#include <cstring>

#include "cpu/common/parallel.h"
#include "cpu/onednn/conv_geometry.h"
#include "cpu/onednn/kept_args.h"
#include "cpu/onednn/quantized_common.h"
#include "cpu/ref/quantize_entry.h"
#include "cpu/ref/quantized_direct.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::onednn {
namespace {

using namespace int8;

// The op's arguments as the kernel got them.
struct ConvOp {
  const Tensor &x, &x_scale, &x_zero_point, &weight, &weight_scale, &bias, &residual, &residual_scale,
      &residual_zero_point, &out_scale, &out_zero_point;
  const std::vector<int64_t>&stride, &padding, &dilation;
  int64_t groups;
  const std::string& activation;
  double alpha;
  bool channels_last;
  DType out_dtype;
  Tensor& out;
};

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


// The parts of a call, each run as its own single-threaded primitive on the kernels' pool, or one part,
// the whole output, on oneDNN's own threads (OpenMP's team). A part is images [n0, n1) and output rows
// [r0, r1) of each, reading input rows [in0, in1) with pad_top rows of padding above.
//  - A batch of 1 in NHWC splits its output rows into one band a thread: oneDNN's int8 convolutions
//    barely gain from a second thread on AVX-512 (host B: a 28x28 32 -> 32 conv 15.7 us on one thread,
//    12.5 on two; a 1x1 one 2.4 -> 7.9 us), while two halves of the rows run side by side. Its AVX2
//    kernels share the work well themselves, and there the bands lost when nothing else ran (host A, the
//    residual example's int8 model at batch 1: 0.275 ms with bands, 0.257 without, 6 alternating rounds;
//    the 7x7 maps' 7 rows split 3 / 4 cost the most), but on OpenMP's team that model took 4.8 ms a run
//    beside a 2-thread pd-train against 0.32 in bands (host B with PD_CPU_ISA=avx2, where bands and team
//    were level quiet, 0.207 against 0.213 ms): bands on every ISA.
//  - A larger batch in NHWC splits its images into one part a thread: on OpenMP's team every convolution
//    ends at a barrier, so beside another busy process each one waited out that process's time slice for
//    the thread the OS had taken off its core (the residual example's int8 model at batch 64, host B: p50
//    3.1 ms quiet, 11.6 beside a 2-thread pd-train; in parts 3.1 and 6.6), while a part the pool's worker
//    has not started is taken back by the caller. Smaller parts, up to 4 a thread, read the same loaded
//    and up to 10% slower quiet.
//  - A batch of 1 whose few rows do not split evenly (a 7x7 map's 3 / 4 on two threads: the thread with 4
//    rows took 23 of the layer's 25 K cycles, the other 18) splits its output channels instead, each part
//    all the rows of its channels, written dense and then put in place (channel_part).
struct Part {
  int64_t n0, n1, r0, r1, in0, in1, pad_top;
  int64_t o0 = 0, o1 = 0;  // output channels [o0, o1); o1 == 0: all of them
};

bool channel_part(const Part& p) { return p.o1 > 0; }

std::vector<Part> conv_parts(const Shape& x, const Shape& w, const Shape& y, const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                             bool channels_last, int threads) {
  const int64_t N = x[0], H = x[2], OH = y[2], KH = w[2], OC = w[0];
  const std::vector<Part> whole = {{0, N, 0, OH, 0, H, padding[0]}};
  if (!channels_last || threads < 2) return whole;
  std::vector<Part> parts;
  if (N > 1) {
    const int64_t per = (N + threads - 1) / threads;
    for (int64_t n0 = 0; n0 < N; n0 += per) parts.push_back({n0, std::min(N, n0 + per), 0, OH, 0, H, padding[0]});
    return parts;
  }
  constexpr int64_t kChannelBlock = 16;  // oneDNN's int8 blocks of output channels on AVX-512
  if (OH % threads != 0 && OH <= 4 * threads && groups == 1 && OC % (kChannelBlock * threads) == 0) {
    for (int64_t t = 0; t < threads; ++t) parts.push_back({0, 1, 0, OH, 0, H, padding[0], OC * t / threads, OC * (t + 1) / threads});
    return parts;
  }
  if (OH < 2 * threads) return whole;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t r0 = OH * t / threads, r1 = OH * (t + 1) / threads;
    const int64_t first = r0 * stride[0] - padding[0], last = (r1 - 1) * stride[0] - padding[0] + (KH - 1) * dilation[0];
    const Part b{0, 1, r0, r1, std::max<int64_t>(first, 0), std::min(last + 1, H), std::max<int64_t>(-first, 0)};
    if (b.in1 <= b.in0) return whole;  // a band inside the padding
    parts.push_back(b);
  }
  return parts;
}

// Everything a call derives from its weights, scales, zero points and shapes: the parameters in oneDNN's
// terms and, per part (conv_parts), its primitive, the weights as it reads them and the descriptors of
// the user's buffers. In an inference executor whose weights, scales and zero points are constants it is
// built once and kept in ctx.packed, so that a call only wraps its buffers and runs: building the scales,
// attributes, cache keys and argument maps cost about 5 us a convolution, a third of the residual
// example's batch-1 time (host B).
struct ConvCall {
  struct PartCall {
    Part part;
    std::shared_ptr<ConvEntry> e;
    dnnl::memory::desc src, dst, residual;  // the user's layout (residual: an f32 one the primitive reorders);
                                            // a channel part's dst: its channels alone, dense
    dnnl::memory weights;
    std::shared_ptr<const std::vector<float>> bias_values;  // a channel part's bias (else the call's)
    dnnl::memory bias;                                       // over them
  };
  Int8Params p;
  bool reference = false;  // oneDNN has no exact form of the activation: the reference kernel runs
  std::vector<PartCall> parts;
  int64_t out_channels = 0;
  int64_t x_row = 0, out_row = 0;     // elements per row of the input and of the result (C * W)
  int64_t x_rows = 0, out_rows = 0;  // rows per image of the input and of the result (H)
  bool has_bias = false;
  dnnl::memory bias;             // over p.bias
  int32_t zero_points[2] = {};   // what the runtime zero-point memories read
  std::unordered_map<int, dnnl::memory> zero_point_args;
  std::vector<Tensor> keep;  // halved weights a part reads in place (7-bit path without a reorder)
};

// Builds a ConvCall (in place: its memories point into it). Runs inside guarded(): the weights of a call
// whose weight is not constant may be a scratch reorder, valid until that returns.
std::shared_ptr<ConvCall> make_conv_call(const KernelContext& ctx, const ConvOp& op) {
  auto call = std::make_shared<ConvCall>();
  ConvCall& c = *call;
  const DType src_dtype = op.x.dtype() == DType::u8 || cpu_has_vnni() ? op.x.dtype() : DType::u8;  // int8_source's
  c.p = int8_params(ctx, src_dtype, source_zero_point(op.x, op.x_zero_point), op.x_scale, op.weight, op.weight_scale,
                    op.bias, op.out_scale, op.out_zero_point, op.out_dtype);
  if (op.residual.defined()) residual_terms(c.p, op.residual.dtype(), op.residual_scale, op.residual_zero_point, op.out_dtype);
  const Int8Params& p = c.p;
  const auto attr = int8_attr(p, 1 << 1, parse_activation("quantized_conv2d", op.activation), op.alpha, op.out_dtype);
  if (!attr) {
    c.reference = true;
    return call;
  }
  const auto nchw = [&](const Shape& s) { return op.channels_last ? Shape{s[0], s[3], s[1], s[2]} : s; };
  const dt src_dt = onednn_dtype(src_dtype), dst_dt = onednn_dtype(op.out_dtype);
  // The user's activations as they are in memory: oneDNN's dims are always N, C, H, W.
  const auto plain = [&](const dims& d, dt type) { return dnnl::memory::desc(d, type, op.channels_last ? tag::nhwc : tag::nchw); };
  const bool int8_sum = p.residual && p.residual_dtype != DType::f32;
  const Shape xs = nchw(op.x.shape()), ys = nchw(op.out.shape());
  c.out_channels = ys[1];
  c.x_row = xs[1] * xs[3];
  c.out_row = ys[1] * ys[3];
  c.x_rows = xs[2];
  c.out_rows = ys[2];
  // One primitive per part (conv_parts). Several run on the kernels' pool, so each is made for one thread
  // (oneDNN splits the work by the thread count it sees when the primitive is made); parts of the same
  // size share it.
  const std::vector<Part> parts =
      conv_parts(xs, op.weight.shape(), ys, op.stride, op.padding, op.dilation, op.groups, op.channels_last, ctx.threads);
  const bool one_thread = parts.size() > 1;
  for (const Part& b : parts) {
    // A channel part: its rows of the weight, its scales and biases.
    const bool channels = channel_part(b);
    const Shape& ws = op.weight.shape();
    const int64_t oc = channels ? b.o1 - b.o0 : ws[0];
    Int8Params own;
    if (channels) {
      own = p;
      own.output_scales.assign(p.output_scales.begin() + b.o0, p.output_scales.begin() + b.o1);
      if (!p.bias.empty()) own.bias.assign(p.bias.begin() + b.o0, p.bias.begin() + b.o1);
      own.mix(&b.o0, sizeof b.o0);
      own.mix(&b.o1, sizeof b.o1);
    }
    const Int8Params& pp = channels ? own : p;
    const Tensor weight = channels ? op.weight.as_strided({oc, ws[1], ws[2], ws[3]}, {ws[1] * ws[2] * ws[3], ws[2] * ws[3], ws[3], 1},
                                                          op.weight.offset() + b.o0 * ws[1] * ws[2] * ws[3])
                                   : op.weight;
    const auto part_attr = channels ? int8_attr(pp, 1 << 1, parse_activation("quantized_conv2d", op.activation), op.alpha, op.out_dtype)
                                    : attr;
    const ConvGeometry g({b.n1 - b.n0, xs[1], b.in1 - b.in0, xs[3]}, weight.shape(), {b.n1 - b.n0, oc, b.r1 - b.r0, ys[3]},
                         op.stride, {b.pad_top, op.padding[1]}, op.dilation, op.groups);
    const dnnl::memory::desc plain_wei(g.wei, dt::s8, op.groups > 1 ? tag::goihw : tag::oihw);
    const std::string key = fmt::format("{}:{}:{}:{}:{}:{}:{}:{}:{}:{:x}", g.key("quantized_conv2d", op.bias.defined()),
                                        static_cast<int>(src_dt), static_cast<int>(dst_dt), p.residual, op.activation,
                                        op.alpha, p.x_zero_point != 0, p.out_zero_point != 0, op.channels_last, pp.hash) +
                            (one_thread ? ":t1" : "");
    OneThreadIf single(one_thread);
    auto e = cached<ConvEntry>(key, [&] {
      // channels_last asks for the user's NHWC itself (every int8 implementation reads it): no reorders.
      // An int8 residual goes into the destination byte for byte, so that must be the user's layout too.
      const tag act_tag = op.channels_last ? tag::nhwc : tag::any;
      const dnnl::memory::desc any_src(g.src, src_dt, act_tag), any_wei(g.wei, dt::s8, tag::any),
          any_dst(g.dst, dst_dt, int8_sum && !op.channels_last ? tag::nchw : act_tag);
      const auto d = op.bias.defined()
                         ? conv_fwd::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_src,
                                          any_wei, plain_desc(dims{g.dst[1]}), any_dst, g.strides, g.dilates, g.pad_l, g.pad_r)
                         : conv_fwd::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_src,
                                          any_wei, any_dst, g.strides, g.dilates, g.pad_l, g.pad_r);
      const conv_fwd::primitive_desc pd(d, *part_attr, cpu_engine());
      return ConvEntry{conv_fwd(pd), OptionalReorder::make(plain(g.src, src_dt), pd.src_desc()),
                       OptionalReorder::make(plain_wei, pd.weights_desc()),
                       OptionalReorder::make(pd.dst_desc(), plain(g.dst, dst_dt)), pd.scratchpad_desc(),
                       p.residual && !int8_sum ? OptionalReorder::make(plain(g.dst, dt::f32), pd.dst_desc()) : OptionalReorder{}};
    });
    Tensor halved;
    dnnl::memory weights = int8_weights(ctx, e->in1, plain_wei, weight, pp, key, halved);
    if (halved.defined()) c.keep.push_back(halved);
    c.parts.push_back({b, e, plain(g.src, src_dt), plain(g.dst, dst_dt), plain(g.dst, dt::f32), weights, nullptr, {}});
    if (channels && op.bias.defined()) {
      auto values = std::make_shared<const std::vector<float>>(own.bias);
      c.parts.back().bias = dnnl::memory(plain_desc(dims{oc}), cpu_engine(), const_cast<float*>(values->data()));
      c.parts.back().bias_values = std::move(values);
    }
  }
  if (op.bias.defined()) {
    c.has_bias = true;
    c.bias = dnnl::memory(plain_desc(dims{ys[1]}), cpu_engine(), c.p.bias.data());
  }
  add_zero_points(c.zero_point_args, p, op.out_dtype, c.zero_points);
  return call;
}

// The key of a call's ConvCall in ctx.packed, or "" when a tensor it is built from is not a constant
// there.
std::string conv_call_key(const KernelContext& ctx, const ConvOp& op) {
  if (!ctx.packed) return "";
  PackedKey key("int8:conv_call");
  for (const Tensor* t : {&op.x_scale, &op.x_zero_point, &op.weight, &op.weight_scale, &op.bias, &op.residual_scale,
                          &op.residual_zero_point, &op.out_scale, &op.out_zero_point})
    if (!key.add_constant(*ctx.packed, *t)) return "";
  key.add(op.x.shape());
  key.add(op.stride);
  key.add(op.padding);
  key.add(op.dilation);
  key.add(op.x.dtype());
  key.add(op.residual.defined() ? op.residual.dtype() : DType::boolean);  // bool: no residual
  key.add(op.out_dtype);
  key.add(op.groups);
  key.add(op.alpha);
  key.add(op.channels_last);
  key.add(ctx.threads);
  key.add(op.activation);
  return key.str();
}

// The ConvCall of this call: kept in ctx.packed when conv_call_key names one (`kept`), else built for
// this call.
std::shared_ptr<const ConvCall> packed_conv_call(const KernelContext& ctx, const ConvOp& op, bool& kept) {
  const std::string key = conv_call_key(ctx, op);
  kept = !key.empty();
  if (key.empty()) return make_conv_call(ctx, op);
  if (std::shared_ptr<void> hit = ctx.packed->find(key)) return std::static_pointer_cast<const ConvCall>(hit);
  std::shared_ptr<ConvCall> made = make_conv_call(ctx, op);
  ctx.packed->store(key, made);
  return made;
}

// packed_conv_call's, kept in the op's memo slot as well: its key (a string of the constants' identities
// and the attributes) took about 0.5 us a call to build and find (the residual example's int8 model at
// batch 1 on one thread, host B: 0.107 -> 0.1055 ms). An op's attributes never change; what else its
// calls may differ in is the variant.
std::shared_ptr<const ConvCall> conv_call(const KernelContext& ctx, const ConvOp& op, bool& kept) {
  const int64_t variant = ((static_cast<int64_t>(op.x.dtype()) * 64 + (op.residual.defined() ? static_cast<int64_t>(op.residual.dtype()) : 63)) * 64 +
                           static_cast<int64_t>(op.out_dtype)) * 1024 + ctx.threads;
  bool made = false, made_kept = false;
  std::shared_ptr<const ConvCall> call = memoized<ConvCall>(
      ctx, "quantized_conv2d", variant, op.x.shape(),
      {&op.x_scale, &op.x_zero_point, &op.weight, &op.weight_scale, &op.bias, &op.residual_scale, &op.residual_zero_point,
       &op.out_scale, &op.out_zero_point},
      [&] {
        made = true;
        return packed_conv_call(ctx, op, made_kept);
      });
  kept = made ? made_kept : true;  // the memo keeps only calls of constants, which ctx.packed keeps too
  return call;
}

// `count` values of an int8 residual from `at` dequantized into `to` (an f32 result's sum adds real values).
void dequantize_residual(const Tensor& residual, const Int8Params& p, int64_t at, int64_t count, float* to) {
  if (residual.dtype() == DType::u8) reference::dequantize_row(residual.data<uint8_t>() + at, to, count, p.residual_scale, p.residual_zero_point);
  else reference::dequantize_row(residual.data<int8_t>() + at, to, count, p.residual_scale, p.residual_zero_point);
}

// An int8 residual of an f32 result dequantized into `to`: `count` values from `at` (to[at...]). Across
// threads when it is large enough to pay for the fork (at batch 1 it is a few thousand values, and each
// part widens its own rows).
void widen_residual(const Tensor& residual, const Int8Params& p, int64_t at, int64_t count, float* to) {
  const int64_t block = 16384;
  cpu::parallel_for((count + block - 1) / block, block, [&](int64_t b) {
    const int64_t begin = at + b * block;
    dequantize_residual(residual, p, begin, std::min(at + count, begin + block) - begin, to + begin);
  });
}

// Whether a part's primitive writes the user's result itself and takes an f32 residual there as it is
// (no reorder of either).
bool writes_in_place(const ConvCall::PartCall& b) { return !b.e->out.prim && !b.e->residual_in.prim; }

// Whether every part writes in place: then a widened residual goes straight into the result.
bool residual_in_place(const ConvCall& c) { return std::all_of(c.parts.begin(), c.parts.end(), writes_in_place); }

// A part's argument map: the call's zero points, weights and bias, and the source, destination and
// scratchpad memories given.
ArgMap part_args(const ConvCall& c, const ConvCall::PartCall& b, const dnnl::memory& src, const dnnl::memory& dst,
                 const dnnl::memory& scratch) {
  ArgMap args = c.zero_point_args;
  args.emplace(DNNL_ARG_SRC, src);
  args.emplace(DNNL_ARG_WEIGHTS, b.weights);
  args.emplace(DNNL_ARG_DST, dst);
  args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
  if (c.has_bias) args.emplace(DNNL_ARG_BIAS, b.bias_values ? b.bias : c.bias);
  return args;
}

// The parts' maps kept in the op's memo slot (kept_args.h) for a call whose primitives read and write the
// user's buffers as they are (no reorder around them: NHWC int8, the usual case); null otherwise. Each
// map's scratchpad is its own, made with it (an executor's op runs one call at a time).
ArgMap* kept_part_args(const KernelContext& ctx, const std::shared_ptr<const ConvCall>& call) {
  const auto plain = [](const ConvCall::PartCall& b) { return writes_in_place(b) && !b.e->in0.prim; };
  if (!std::all_of(call->parts.begin(), call->parts.end(), plain)) return nullptr;
  return kept_arg_maps(ctx, call, [&] {
    std::vector<ArgMap> maps;
    for (const ConvCall::PartCall& b : call->parts)
      maps.push_back(part_args(*call, b, dnnl::memory(b.src, cpu_engine(), nullptr),
                               channel_part(b.part) ? dnnl::memory(b.dst, cpu_engine()) : dnnl::memory(b.dst, cpu_engine(), nullptr),
                               dnnl::memory(b.e->scratchpad, cpu_engine())));
    return maps;
  });
}

// One run of a call's parts. A part's rows are contiguous in NHWC (several parts are NHWC; a single one
// starts at 0, whatever the layout): its x, residual and result start at its first row of its first
// image.
struct ConvRun {
  const ConvCall& c;
  const ConvOp& op;
  Tensor src;  // int8_source's
  Tensor res;  // the residual as the primitives' sum reads it from the result; undefined: already there
                // (or none)
  bool widen_in_place = false;  // an int8 residual each part widens into its rows of the f32 result

  int64_t out_at(const Part& p) const { return (p.n0 * c.out_rows + p.r0) * c.out_row; }
  char* out_base(const Part& p) const { return static_cast<char*>(op.out.raw_data()) + out_at(p) * dtype_size(op.out_dtype); }
  char* x_base(const Part& p) const {
    return const_cast<char*>(static_cast<const char*>(src.raw_data())) + (p.n0 * c.x_rows + p.in0) * c.x_row * dtype_size(src.dtype());
  }
  int64_t part_values(const Part& p) const { return (p.n1 - p.n0) * (p.r1 - p.r0) * c.out_row; }

  // A channel part's pixels, each its channels [o0, o1) of the result's.
  int64_t part_pixels(const Part& p) const { return part_values(p) / c.out_channels; }

  // A channel part's residual channels into its dense destination `to`, which its sum post-op reads.
  void take_residual_channels(const Part& p, char* to) const {
    const int64_t oc = p.o1 - p.o0, from = out_at(p) + p.o0;
    if (widen_in_place) {
      for (int64_t i = 0; i < part_pixels(p); ++i)
        dequantize_residual(op.residual, c.p, from + i * c.out_channels, oc, reinterpret_cast<float*>(to) + i * oc);
      return;
    }
    if (!res.defined()) return;
    const size_t size = dtype_size(res.dtype());
    const char* r = static_cast<const char*>(res.raw_data());
    for (int64_t i = 0; i < part_pixels(p); ++i)
      std::memcpy(to + i * oc * size, r + (from + i * c.out_channels) * size, static_cast<size_t>(oc) * size);
  }

  // A channel part's dense result `from` into its channels of the user's.
  void put_channels(const Part& p, const char* from) const {
    const int64_t oc = p.o1 - p.o0;
    const size_t size = dtype_size(op.out_dtype);
    char* out = static_cast<char*>(op.out.raw_data()) + (out_at(p) + p.o0) * size;
    for (int64_t i = 0; i < part_pixels(p); ++i)
      std::memcpy(out + i * c.out_channels * size, from + i * oc * size, static_cast<size_t>(oc) * size);
  }

  // The part's residual into `dst` (the primitive's destination), which its sum post-op reads.
  void place_residual(const ConvCall::PartCall& b, dnnl::memory& dst) const {
    if (channel_part(b.part)) return take_residual_channels(b.part, static_cast<char*>(dst.get_data_handle()));
    if (widen_in_place) return widen_residual(op.residual, c.p, out_at(b.part), part_values(b.part), op.out.data<float>());
    if (!res.defined()) return;
    const char* r_base = static_cast<const char*>(res.raw_data()) + out_at(b.part) * dtype_size(res.dtype());
    if (b.e->residual_in.prim) {
      dnnl::memory r(b.residual, cpu_engine(), const_cast<char*>(r_base));
      b.e->residual_in.prim->execute(cpu_stream(), r, dst);
    } else {
      copy_across_threads(out_base(b.part), r_base, static_cast<size_t>(part_values(b.part)) * dtype_size(res.dtype()));
    }
  }
};

// `kept`: the parts' kept argument maps (kept_part_args), or null to make them for this call. With kept
// maps each part places its residual in its own rows and runs on the thread that reads them next.
void run_conv_call(const ConvCall& c, const ConvOp& op, ArgMap* kept) {
  ConvRun run{c, op, int8_source(op.x), op.residual};
  if (c.p.widen_residual) {  // into the result itself where it can (then there is nothing left to copy)
    run.widen_in_place = residual_in_place(c);
    run.res = run.widen_in_place ? Tensor() : Tensor::empty(op.residual.shape(), DType::f32);
    if (!run.widen_in_place) widen_residual(op.residual, c.p, 0, op.residual.numel(), run.res.data<float>());
  }
  if (kept) {
    const auto part = [&](int64_t i) {
      const ConvCall::PartCall& b = c.parts[static_cast<size_t>(i)];
      ArgMap& args = kept[i];
      dnnl::memory& dst = args.at(DNNL_ARG_DST);
      if (!channel_part(b.part)) dst.set_data_handle(run.out_base(b.part));  // else its own buffer
      args.at(DNNL_ARG_SRC).set_data_handle(run.x_base(b.part));
      run.place_residual(b, dst);
      if (c.parts.size() == 1) b.e->prim.execute(cpu_stream(), args);  // made for the whole team
      else run_primitive(b.e->prim, args);
      if (channel_part(b.part)) run.put_channels(b.part, static_cast<const char*>(dst.get_data_handle()));
    };
    if (c.parts.size() == 1) return part(0);
    return parallel_items(static_cast<int64_t>(c.parts.size()), part);  // each primitive made for one thread
  }
  std::vector<ArgMap> made;
  for (const ConvCall::PartCall& b : c.parts) {
    const ConvEntry& e = *b.e;
    const dnnl::memory user_dst = channel_part(b.part) ? dnnl::memory(b.dst, cpu_engine()) : dnnl::memory(b.dst, cpu_engine(), run.out_base(b.part));
    dnnl::memory dst = output_buffer(e.out, user_dst);
    run.place_residual(b, dst);
    made.push_back(part_args(c, b, reorder_in(e.in0, dnnl::memory(b.src, cpu_engine(), run.x_base(b.part))), dst,
                             scratch_memory(e.scratchpad)));
    if (e.out.prim) {  // a layout of the primitive's own: one part (conv_parts gives several only in NHWC)
      e.prim.execute(cpu_stream(), made.back());
      reorder_out(e.out, dst, user_dst);
      return;
    }
  }
  if (c.parts.size() == 1) return c.parts[0].e->prim.execute(cpu_stream(), made[0]);
  parallel_items(static_cast<int64_t>(c.parts.size()), [&](int64_t i) {
    const ConvCall::PartCall& b = c.parts[static_cast<size_t>(i)];
    run_primitive(b.e->prim, made[i]);
    if (channel_part(b.part)) run.put_channels(b.part, static_cast<const char*>(made[i].at(DNNL_ARG_DST).get_data_handle()));
  });
}

// A 1x1 convolution of an NHWC map into few output pixels (a residual block's projection at batch 1:
// 49 to 196 pixels) is the product of the pixels' channel rows with the [C_out, C_in] weight. The direct
// int8 linear kernel does it in a few us, reading the pixels where they lie at any stride, where the
// convolution primitive's fixed cost is about 17 (both host kinds, 2 threads: the 0.4 M multiply-adds of
// the residual example's projections). False: not such a call (or the linear kernel declined it).
constexpr int64_t kPointwiseMostRows = 256;  // the direct linear kernel's bound on rows

bool pointwise_as_linear(const KernelContext& ctx, const ConvOp& op, bool seven_bit) {
  const Shape &ws = op.weight.shape(), &xs = op.x.shape(), &ys = op.out.shape();
  const int64_t C = xs[3], rows = ys[0] * ys[1] * ys[2];
  const auto ones = [](const std::vector<int64_t>& v) { return v.size() == 2 && v[0] == 1 && v[1] == 1; };
  if (!op.channels_last || ws[2] != 1 || ws[3] != 1 || op.groups != 1 || op.residual.defined() || !ones(op.dilation) ||
      op.padding.size() != 2 || op.padding[0] != 0 || op.padding[1] != 0 || C < 16 || rows > kPointwiseMostRows)
    return false;  // fewer channels: the direct convolution kernels' case
  const Tensor matrix = op.weight.as_strided({ws[0], ws[1]}, {ws[1], 1}, op.weight.offset());
  return reference::quantized_pointwise_direct(ctx, seven_bit, op.x, op.stride[0], op.stride[1], op.x_scale, op.x_zero_point, matrix,
                                               op.weight_scale, op.bias, op.out_scale, op.out_zero_point, op.activation, op.alpha,
                                               op.out_dtype, op.out);
}

}  // namespace

template <typename T>
void quantized_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                      const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                      const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                      const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                      const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                      bool channels_last, DType out_dtype, bool quantize_x, Tensor& out) {
  parse_activation("quantized_conv2d", activation);
  if (quantize_x)
    return quantized_conv2d<T>(ctx, reference::quantize_to_nhwc("quantized_conv2d", x, x_scale, x_zero_point), x_scale, x_zero_point,
                               weight, weight_scale, bias, residual, residual_scale, residual_zero_point, out_scale, out_zero_point,
                               stride, padding, dilation, groups, activation, alpha, channels_last, out_dtype, false, out);
  if (out.numel() == 0) return;
  const bool seven_bit = !cpu_has_vnni() && beyond_seven_bits(ctx, weight);
  const ConvOp op{x, x_scale, x_zero_point, weight, weight_scale, bias, residual, residual_scale, residual_zero_point,
                  out_scale, out_zero_point, stride, padding, dilation, groups, activation, alpha, channels_last, out_dtype, out};
  if (pointwise_as_linear(ctx, op, seven_bit) ||
      reference::quantized_conv2d_direct(ctx, seven_bit, x, x_scale, x_zero_point, weight, weight_scale, bias, residual,
                                         residual_scale, residual_zero_point, out_scale, out_zero_point, stride, padding, dilation,
                                         groups, activation, alpha, channels_last, out_dtype, out))
    return;
  bool on_reference = false;
  guarded("quantized_conv2d", [&] {
    bool kept = false;
    const std::shared_ptr<const ConvCall> call = conv_call(ctx, op, kept);
    if (call->reference) on_reference = true;
    else run_conv_call(*call, op, kept ? kept_part_args(ctx, call) : nullptr);
  });
  if (on_reference)
    reference::quantized_conv2d<T>(ctx, x, x_scale, x_zero_point, weight, weight_scale, bias, residual, residual_scale,
                                   residual_zero_point, out_scale, out_zero_point, stride, padding, dilation, groups,
                                   activation, alpha, channels_last, out_dtype, /*quantize_x=*/false, out);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(quantized_conv2d, onednn, uint8_t, int8_t)
