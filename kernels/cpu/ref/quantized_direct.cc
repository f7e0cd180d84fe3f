// quantized_direct.h's convolution: which path takes a call, its packed weights and padded input, and
// the threads over its rows (the linear kernel is quantized_direct_linear.cc; what both share,
// quantized_direct_common.h and quantized_direct_epilogue.h). Two vector paths, chosen once per process:
//  - AVX-512 VNNI (quantized_direct_vnni.cc): the activations as u8 (s8 shifted by 128, zero point with it), one vpdpbusd per 4
//    products x 16 output channels; the zero point comes off afterwards as zero_point * (sum of the
//    channel's weights).
//  - AVX2 (quantized_direct_avx2.cc) with weights within 7 bits ([-64, 64]: always so where the oneDNN
//    backend halves them on CPUs without VNNI): the VNNI kernel's u8 input and packed weights, one vpmaddubsw (pairs of u8 x s8
//    products in 16 bits, exact since 2 x 255 x 64 < 32768) and one vpmaddwd by ones per 4 products x 8
//    output channels: twice vpmaddwd's products per instruction.
//    Weights within 6 bits (pd-quant --weight-bits 6) add two such pair sums in 16 bits (exact: 4 x 255 x
//    32 < 32768) before the vpmaddwd, 3 multiplies per 8 products: there the kernel beats oneDNN's
//    vpmaddubsw kernels and takes wide convolutions too (ConvShape::pairs), int8 residual included.
//  - AVX2 with 8-bit weights (the reference backend): the activations minus their zero point widened to
//    int16, the weights to int16, one vpmaddwd per 2 products x 8 output channels. Exact, where
//    vpmaddubsw would saturate.
// The convolution reads an NHWC copy of the input padded with the zero point (so borders need no tests):
// for a fixed kernel row, the taps of an output pixel are one contiguous run of KW * C values, which the
// kernel takes 4 (2) at a time against weights packed [kernel row][run group][output channel][4 (2)],
// zero past the run's end. Output channels are the vector lanes, so the result is NHWC as it is written.
#include "cpu/ref/quantized_direct.h"
#include "cpu/ref/quantized_direct_epilogue.h"
#include "cpu/ref/quantize_entry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12's AVX-512 intrinsics start some results from `__Y = __Y` (an undefined vector) and then warn
// about it where they are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "cpu/common/parallel.h"
#include "elementwise_ops.h"
#include "pd/core/cpu_features.h"
#include "pd/core/packed_weights.h"

namespace pd::kernels::reference {

#if defined(__x86_64__)
namespace {

using namespace int8_direct;

// ---- convolution ---------------------------------------------------------------------------------

struct ConvPack {
  std::vector<int8_t> w8;    // VNNI and AVX2 on u8: [KH][groups][COp][4]
  std::vector<int16_t> w16;  // AVX2: [KH][groups][COp][2]
  std::vector<int32_t> sum;  // per output channel: the sum of its weights
};

ConvPack pack_conv(const ConvShape& s, const Tensor& weight, Path path, bool seven_bit) {
  ConvPack p;
  const bool bytes = path != Path::avx2;  // VNNI and AVX2 on u8: 4 bytes a lane
  const int64_t per = bytes ? 4 : 2;
  const size_t size = static_cast<size_t>(s.KH * s.groups * s.COp * per);
  if (bytes) p.w8.assign(size, 0);
  else p.w16.assign(size, 0);
  p.sum.assign(static_cast<size_t>(s.COp), 0);
  const int8_t* w = weight.data<int8_t>();  // [CO][C][KH][KW]
  for (int64_t o = 0; o < s.CO; ++o)
    for (int64_t ci = 0; ci < s.C; ++ci)
      for (int64_t ky = 0; ky < s.KH; ++ky)
        for (int64_t kx = 0; kx < s.KW; ++kx) {
          const int8_t v = weight_value(w[((o * s.C + ci) * s.KH + ky) * s.KW + kx], seven_bit);
          const int64_t j = kx * s.C + ci;  // position in the kernel row's run
          const size_t at = static_cast<size_t>(((ky * s.groups + j / per) * s.COp + o) * per + j % per);
          if (bytes) p.w8[at] = v;
          else p.w16[at] = v;
          p.sum[o] += v;
        }
  return p;
}

// Padded row hp (of Hp) of image n into `row` (Wp x C values): `pad` (the zero point) beyond the input,
// the input's values mapped to the path's.
template <typename Q, typename T, typename Map>
void pad_row(const ConvShape& s, const T* x, Q pad, Map map, int64_t n, int64_t hp, Q* row) {
  const int64_t h = hp - s.ph;
  if (h < 0 || h >= s.H) {
    std::fill(row, row + s.Wp * s.C, pad);
    return;
  }
  std::fill(row, row + s.pw * s.C, pad);
  const T* src = x + (n * s.H + h) * s.W * s.C;
  Q* dst = row + s.pw * s.C;
  if constexpr (std::is_same_v<Q, T>) std::memcpy(dst, src, static_cast<size_t>(s.W * s.C));  // u8 as it is
  else
    for (int64_t i = 0; i < s.W * s.C; ++i) dst[i] = map(src[i]);
  std::fill(dst + s.W * s.C, row + s.Wp * s.C, pad);
}

// The NHWC input with `pad` rows and columns of the zero point around each image, mapped to the path's
// values, and a tail of zeros for the last run group's read past the end.
template <typename Q, typename T, typename Map>
void fill_padded(const ConvShape& s, const T* x, Q pad, Map map, std::vector<Q>& buffer) {
  buffer.resize(static_cast<size_t>(s.N * s.Hp * s.Wp * s.C + 64));
  Q* b = buffer.data();
  std::fill(b + s.N * s.Hp * s.Wp * s.C, b + buffer.size(), Q(0));
  cpu::parallel_for(s.N * s.Hp, s.Wp * s.C, [&](int64_t r) { pad_row(s, x, pad, map, r / s.Hp, r % s.Hp, b + r * s.Wp * s.C); });
}

// What a direct convolution call derives from its arguments.
struct DirectConv {
  ConvShape s{};
  Epilogue e;
  bool u8 = true;
  int32_t zp = 0;
};

// False where the direct kernels do not take the convolution; OH x OW is its output (before any pool).
bool setup_direct(Path path, bool seven_bit, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& weight,
                  const Tensor& weight_scale, const Tensor& bias, const Tensor& residual, const Tensor& residual_scale,
                  const Tensor& residual_zero_point, const Tensor& out_scale, const Tensor& out_zero_point,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                  int64_t groups, const std::string& activation, double alpha, bool channels_last, DType out_dtype, int64_t OH,
                  int64_t OW, DirectConv& c) {
  const Activation act = parse_activation("quantized_conv2d", activation);
  const bool int8_residual = residual.defined() && residual.dtype() != DType::f32;  // AVX2's epilogue only
  if (path == Path::none || !channels_last || groups != 1 || dilation[0] != 1 || dilation[1] != 1 || !vector_activation(act) ||
      x.numel() == 0 || OH <= 0 || OW <= 0 || (int8_residual && path != Path::avx2_u8))
    return false;
  ConvShape& s = c.s;
  s.N = x.shape()[0], s.H = x.shape()[1], s.W = x.shape()[2], s.C = x.shape()[3];
  s.CO = weight.shape()[0], s.KH = weight.shape()[2], s.KW = weight.shape()[3];
  s.OH = OH, s.OW = OW;
  s.sh = stride[0], s.sw = stride[1], s.ph = padding[0], s.pw = padding[1];
  s.run = s.KW * s.C;
  // Not where oneDNN has AVX-VNNI's vpdpbusd (int8_path() says avx2 there too), nor for a kernel row of
  // one group (a stem's 3 taps), which a pair would only pad.
  s.pairs = path == Path::avx2_u8 && !seven_bit && !cpu_has_vnni() && s.run > 4 && within_six_bits(weight);
  // Few input channels only: from 16 on, oneDNN's blocked kernels lose nothing to padding and win, but
  // for pair sums up to 128 (the residual example's widest; more is untried).
  if ((s.C >= 16 || s.run > 64) && !(s.pairs && s.C <= 128)) return false;
  if (int8_residual && !s.pairs) return false;  // taken only with the layer's pair sums: else oneDNN's sum post-op
  s.Hp = s.H + 2 * s.ph, s.Wp = s.W + 2 * s.pw;
  s.groups = path == Path::avx2 ? (s.run + 1) / 2 : (s.run + 3) / 4;
  if (s.pairs) s.groups = round_up(s.groups, 2);  // the last pair's second group reads zero weights
  s.COp = round_up(s.CO, kLanes);
  c.e = make_epilogue(x_scale, weight_scale, bias, out_scale, out_zero_point, act, alpha, out_dtype, s.CO, seven_bit);
  set_residual(c.e, residual, residual_scale, residual_zero_point);
  c.u8 = x_zero_point.dtype() == DType::u8;  // x's own, or its quantized form's where x is f32
  c.zp = c.u8 ? int32_t{x_zero_point.item<uint8_t>()} : int32_t{x_zero_point.item<int8_t>()};
  return true;
}

// The zero point as the VNNI kernels read the input: u8, s8 shifted by 128 (v ^ 0x80).
int32_t u8_zero_point(const DirectConv& c) { return c.u8 ? c.zp : c.zp + 128; }

// An f32 input of one channel ([N, H, W, 1], as quantized_conv2d_maxpool_direct takes it) quantized.
Tensor quantized_one_channel(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point) {
  const Shape& xs = x.shape();
  const Tensor nchw = x.as_strided({xs[0], 1, xs[1], xs[2]}, {xs[1] * xs[2], xs[1] * xs[2], xs[2], 1}, x.offset());
  return quantize_to_nhwc("quantized_conv2d_maxpool", nchw, x_scale, x_zero_point);
}

PixelInput pixel_input(const DirectConv& c, const Tensor& x, const Tensor& x_scale) {
  const DType dtype = x.dtype() == DType::f32 ? DType::f32 : c.u8 ? DType::u8 : DType::i8;
  return {x.raw_data(), dtype, u8_zero_point(c), x_scale.item<float>()};
}

// Padded row hp of image n as the u8 kernels (VNNI, AVX2 on u8) read it: u8 as it is, s8 shifted by
// 128, the zero point (shifted alike) around it.
void pad_row_u8(const DirectConv& c, const Tensor& x, int64_t n, int64_t hp, uint8_t* row) {
  const auto pad = static_cast<uint8_t>(u8_zero_point(c));
  if (c.u8) pad_row(c.s, x.data<uint8_t>(), pad, [](uint8_t v) { return v; }, n, hp, row);
  else pad_row(c.s, x.data<int8_t>(), pad, [](int8_t v) { return static_cast<uint8_t>(v ^ 0x80); }, n, hp, row);
}

// The input in this thread's padded buffer as the u8 kernels read it (pad_row_u8), and a tail of zeros
// for the last run group's read past the end. Returns the buffer (the workers get the pointer).
const uint8_t* padded_u8(const DirectConv& c, const Tensor& x) {
  thread_local std::vector<uint8_t> in;
  const ConvShape& s = c.s;
  in.resize(static_cast<size_t>(s.N * s.Hp * s.Wp * s.C + 64));
  std::fill(in.end() - 64, in.end(), uint8_t{0});
  uint8_t* b = in.data();
  cpu::parallel_for(s.N * s.Hp, s.Wp * s.C, [&](int64_t r) { pad_row_u8(c, x, r / s.Hp, r % s.Hp, b + r * s.Wp * s.C); });
  return b;
}

// Whether the epilogue keeps the order of the sums, so that pooling them first changes nothing.
bool monotonic(const Epilogue& e, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c)
    if (!(e.scale[c] > 0.0f)) return false;
  if (e.act == Activation::leaky_relu && !(e.alpha >= 0.0f)) return false;
  if (e.act == Activation::gelu) return false;  // dips below 0 before it rises
  return e.out_dtype == DType::f32 || e.out_scale > 0.0f;
}

// The AVX2 u8 kernel over every output row. At batch 1 each thread takes a band of rows (it reads what
// its core wrote, as the channel-block kernels do: cpu::parallel_for_images), or where the rows do not
// divide among the threads (a 7x7 map's 7 rows split 4 / 3 made a thread wait 1 / 7 of the op) and the
// blocks of 16 output channels do, a share of the channels of every row. Each thread pads the input rows
// its rows read into its own buffer (not one copy on the caller's core that the others then read).
void avx2_conv_rows(const DirectConv& c, const Tensor& x, const int8_t* w, const void* res, void* o, int64_t work) {
  const ConvShape& s = c.s;
  // Output rows [r0, r1) of the batch, channels [ob, oe).
  const auto rows_of = [&](int64_t r0, int64_t r1, int64_t ob, int64_t oe) {
    thread_local std::vector<uint8_t> local;
    for (int64_t r = r0; r < r1;) {
      const int64_t n = r / s.OH, oh0 = r % s.OH, oh1 = std::min(s.OH, oh0 + (r1 - r));
      const int64_t first = oh0 * s.sh, last = (oh1 - 1) * s.sh + s.KH, row_size = s.Wp * s.C;
      local.resize(static_cast<size_t>((last - first) * row_size + 64));
      std::fill(local.end() - 64, local.end(), uint8_t{0});  // the last run group's read past the end
      for (int64_t hp = first; hp < last; ++hp) pad_row_u8(c, x, n, hp, local.data() + (hp - first) * row_size);
      for (int64_t oh = oh0; oh < oh1; ++oh)
        avx2_conv_row_u8(s, c.e, local.data() + (oh * s.sh - first) * row_size, w, res, o, (n * s.OH + oh) * s.OW, ob, oe);
      r += oh1 - oh0;
    }
  };
  const int64_t rows = s.N * s.OH, threads = std::max(1, pd::parallel_threads()), blocks = (s.CO + 15) / 16;
  if (rows % threads != 0 && blocks % threads == 0 && s.N < threads) {
    const int64_t share = blocks / threads * 16;
    return cpu::parallel_ranges_images(threads, threads * rows, work / threads, [&](int64_t begin, int64_t end) {
      for (int64_t q = begin / rows; q * rows < end; ++q)
        rows_of(std::max(begin, q * rows) - q * rows, std::min(end, (q + 1) * rows) - q * rows, q * share,
                std::min(s.CO, (q + 1) * share));
    });
  }
  cpu::parallel_ranges_images(cpu::image_parts(s.N, s.OH), rows, work,
                              [&](int64_t begin, int64_t end) { rows_of(begin, end, 0, s.CO); });
}

}  // namespace

namespace {

// What a direct convolution call derives from its constant inputs, its attributes and the input's
// shape, made once per op (memoized): whether the direct kernels take it, its shape and epilogue (the
// zero point's offsets included), and the packed weights of the path taken.
struct PreparedDirect {
  bool take = false;
  Path path = Path::none;  // weights_path's
  DirectConv c;
  bool pixels = false;  // output pixels as the lanes
  std::shared_ptr<const PixelPack> pixel_pack;
  std::shared_ptr<const ConvPack> conv_pack;
};

// `setup(c, path)` fills p.c and says whether the direct kernels take the call at all.
template <typename Setup>
std::shared_ptr<const PreparedDirect> prepare_direct(const KernelContext& ctx, Path machine, bool seven_bit, bool residual,
                                                     const Tensor& weight, Setup setup) {
  auto p = std::make_shared<PreparedDirect>();
  const Path path = p->path = weights_path(machine, weight, seven_bit);
  if (!(p->take = setup(p->c, path))) return p;
  const ConvShape& s = p->c.s;
  Epilogue& e = p->c.e;
  if (path != Path::avx2 && (p->pixels = pixel_lanes_take(s, residual))) {
    p->pixel_pack = pixel_pack(ctx, s, weight, seven_bit);
    for (int64_t ch = 0; ch < s.CO; ++ch) e.offset[ch] = u8_zero_point(p->c) * p->pixel_pack->sum[ch];
    return p;
  }
  p->conv_pack = packed_once<ConvPack>(ctx, weight, path == Path::avx2_u8 ? "conv-u8" : "conv", seven_bit,
                                       [&] { return pack_conv(s, weight, path, seven_bit); });
  if (path != Path::avx2)
    for (int64_t ch = 0; ch < s.CO; ++ch) e.offset[ch] = u8_zero_point(p->c) * p->conv_pack->sum[ch];
  return p;
}

// What a prepared call may differ in between runs of one op besides the input's shape.
int64_t direct_variant(Path path, bool seven_bit, const Tensor& x, const Tensor& residual) {
  return ((static_cast<int64_t>(path) * 2 + seven_bit) * 2 + residual.defined()) * 64 + static_cast<int64_t>(x.dtype());
}

}  // namespace

bool quantized_conv2d_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                             const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                             const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                             const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                             bool channels_last, DType out_dtype, Tensor& out) {
  const Path path = int8_path();
  if (out.numel() == 0) return false;
  const int64_t residual_dtype = residual.defined() ? static_cast<int64_t>(residual.dtype()) + 1 : 0;
  const auto prepared = memoized<PreparedDirect>(
      ctx, "quantized_conv2d_direct", direct_variant(path, seven_bit, x, residual) * 64 + residual_dtype, x.shape(),
      {&x_scale, &x_zero_point, &weight, &weight_scale, &bias, &residual_scale, &residual_zero_point, &out_scale, &out_zero_point}, [&] {
        return prepare_direct(ctx, path, seven_bit, residual.defined(), weight, [&](DirectConv& c, Path conv) {
          return setup_direct(conv, seven_bit, x, x_scale, x_zero_point, weight, weight_scale, bias, residual, residual_scale,
                              residual_zero_point, out_scale, out_zero_point, stride, padding, dilation, groups, activation, alpha,
                              channels_last, out_dtype, out.shape()[1], out.shape()[2], c);
        });
      });
  if (!prepared->take) return false;
  const DirectConv& c = prepared->c;
  const ConvShape& s = c.s;
  const Epilogue& e = c.e;
  const void* res = residual.defined() ? residual.raw_data() : nullptr;
  void* o = out.raw_data();
  const int64_t work = s.OW * s.CO * (s.KH * s.run / kProductsPerWork + kEpilogueWork);
  if (prepared->pixels)
    return conv_pixel_lanes(ctx, s, e, *prepared->pixel_pack, pixel_input(c, x, x_scale), o, /*pooled=*/false), true;
  const ConvPack& pack = *prepared->conv_pack;
  if (prepared->path == Path::vnni) {
    const uint8_t* padded = padded_u8(c, x);
    cpu::parallel_for(s.N * s.OH, work, [&](int64_t r) {  // an f32 residual, if any (setup_direct)
      vnni_conv_row(s, e, padded, pack.w8.data(), static_cast<const float*>(res), o, r / s.OH, r % s.OH);
    });
  } else if (prepared->path == Path::avx2_u8) {
    avx2_conv_rows(c, x, pack.w8.data(), res, o, work);
  } else {
    thread_local std::vector<int16_t> in;
    const int32_t zp = c.zp;
    if (c.u8) fill_padded<int16_t>(s, x.data<uint8_t>(), int16_t{0}, [zp](uint8_t v) { return static_cast<int16_t>(v - zp); }, in);
    else fill_padded<int16_t>(s, x.data<int8_t>(), int16_t{0}, [zp](int8_t v) { return static_cast<int16_t>(v - zp); }, in);
    const int16_t* padded = in.data();
    cpu::parallel_for(s.N * s.OH, work, [&](int64_t r) { avx2_conv_row_i16(s, e, padded, pack.w16.data(), res, o, r / s.OH, r % s.OH); });
  }
  return true;
}

bool quantized_conv2d_maxpool_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, const Tensor& x_scale,
                                     const Tensor& x_zero_point, const Tensor& weight, const Tensor& weight_scale, const Tensor& bias,
                                     const Tensor& out_scale, const Tensor& out_zero_point, const std::vector<int64_t>& stride,
                                     const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                                     const std::string& activation, double alpha, DType out_dtype,
                                     const std::vector<int64_t>& pool_kernel_size, const std::vector<int64_t>& pool_stride,
                                     const std::vector<int64_t>& pool_padding, Tensor& out) {
  const Path path = int8_path();  // AVX2 with 8-bit weights: the two kernels in turn
  if (path == Path::none || out.numel() == 0) return false;
  const int64_t PH = out.shape()[1], PW = out.shape()[2];
  const auto prepared = memoized<PreparedDirect>(
      ctx, "quantized_conv2d_maxpool_direct", direct_variant(path, seven_bit, x, Tensor()), x.shape(),
      {&x_scale, &x_zero_point, &weight, &weight_scale, &bias, &out_scale, &out_zero_point}, [&] {
        return prepare_direct(ctx, path, seven_bit, /*residual=*/false, weight, [&](DirectConv& c, Path conv) {
          if (conv == Path::avx2) return false;
          const auto two = [](const std::vector<int64_t>& v) { return v.size() == 2 && v[0] == 2 && v[1] == 2; };
          const bool no_padding = pool_padding.size() == 2 && pool_padding[0] == 0 && pool_padding[1] == 0;
          if (!two(pool_kernel_size) || !(pool_stride.empty() || two(pool_stride)) || !no_padding) return false;
          const int64_t OH = (x.shape()[1] + 2 * padding[0] - weight.shape()[2]) / stride[0] + 1;
          const int64_t OW = (x.shape()[2] + 2 * padding[1] - weight.shape()[3]) / stride[1] + 1;
          if (2 * PH > OH || 2 * PW > OW ||  // ceil mode's partial windows
              !setup_direct(conv, seven_bit, x, x_scale, x_zero_point, weight, weight_scale, bias, Tensor(), Tensor(), Tensor(),
                            out_scale, out_zero_point, stride, padding, dilation, groups, activation, alpha, /*channels_last=*/true,
                            out_dtype, OH, OW, c) ||
              !monotonic(c.e, c.s.CO))
            return false;
          return pixel_lanes_take(c.s, false) || c.s.CO <= kLanes;
        });
      });
  if (!prepared->take) return false;
  const DirectConv& c = prepared->c;
  const ConvShape& s = c.s;
  const Epilogue& e = c.e;
  void* o = out.raw_data();
  if (prepared->pixels)
    return conv_pixel_lanes(ctx, s, e, *prepared->pixel_pack, pixel_input(c, x, x_scale), o, /*pooled=*/true), true;
  const uint8_t* padded = padded_u8(c, x.dtype() == DType::f32 ? quantized_one_channel(x, x_scale, x_zero_point) : x);
  const ConvPack& pack = *prepared->conv_pack;
  const auto row = prepared->path == Path::vnni ? vnni_pool_row : avx2_pool_row_u8;
  cpu::parallel_for(s.N * PH, 4 * PW * s.CO * s.KH * s.run / kProductsPerWork,
                    [&](int64_t r) { row(s, e, padded, pack.w8.data(), o, r / PH, r % PH, PH, PW); });
  return true;
}


#else  // not x86-64: the reference loops and oneDNN take every call

bool quantized_conv2d_direct(const KernelContext&, bool, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const std::vector<int64_t>&,
                             const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t, const std::string&, double, bool,
                             DType, Tensor&) {
  return false;
}

bool quantized_conv2d_maxpool_direct(const KernelContext&, bool, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                     const Tensor&, const Tensor&, const Tensor&, const Tensor&, const std::vector<int64_t>&,
                                     const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t, const std::string&, double,
                                     DType, const std::vector<int64_t>&, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                     Tensor&) {
  return false;
}


#endif

}  // namespace pd::kernels::reference
