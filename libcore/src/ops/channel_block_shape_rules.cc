// Shape rules of the channel-blocked layout (to_channel_blocks, from_channel_blocks, blocked_conv2d,
// scale_channel_blocks, gather_channel_blocks, global_avg_pool_nhwc, which takes NHWC as well):
// [N, C, H, W] held as [N, ceil(C / block), H, W, block], the layout oneDNN's convolutions compute in.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "pd/core/error.h"
#include "pd/kernels/grouped_conv_rule.h"
#include "pd/ops/shape_rules.h"

namespace pd::infer {
namespace {

// The lane counts oneDNN has layouts for (nChw4c, nChw8c, nChw16c); any positive one is well defined,
// but a bound keeps a typo from allocating a huge padded tensor.
constexpr int64_t kMaxBlock = 64;

void check_block(const char* op, int64_t block) {
  PD_CHECK(block >= 1 && block <= kMaxBlock, ErrorCode::kInvalidArgument,
           "{}: argument 'block' = {} must be in [1, {}] (16 on AVX-512, 8 on AVX2)", op, block, kMaxBlock);
}

void check_blocked(const char* op, In x) {
  PD_CHECK(x.t.dim() == 5, ErrorCode::kShape, "{}: argument '{}' must be [N, CB, H, W, block] (5-D), but received {}", op, x.name,
           shape_str(x.t.shape()));
}

}  // namespace

Shape to_channel_blocks(const char* op, In x, int64_t block) {
  PD_CHECK(x.t.dim() == 4, ErrorCode::kShape, "{}: argument '{}' must be [N, C, H, W] (4-D), but received {}", op, x.name,
           shape_str(x.t.shape()));
  check_block(op, block);
  const Shape& s = x.t.shape();
  return {s[0], (s[1] + block - 1) / block, s[2], s[3], block};
}

Shape from_channel_blocks(const char* op, In x, int64_t channels) {
  check_blocked(op, x);
  const Shape& s = x.t.shape();
  check_block(op, s[4]);
  PD_CHECK(channels > (s[1] - 1) * s[4] && channels <= s[1] * s[4], ErrorCode::kInvalidArgument,
           "{}: argument 'channels' = {} must fall in the last of the {} blocks of {} of '{}' {}, i.e. in [{}, {}]", op, channels,
           s[1], s[4], x.name, shape_str(s), (s[1] - 1) * s[4] + 1, s[1] * s[4]);
  return {s[0], channels, s[2], s[3]};
}

Shape global_avg_pool_nhwc(const char* op, In x, int64_t channels) {
  const Shape& s = x.t.shape();
  PD_CHECK(s.size() == 4 || s.size() == 5, ErrorCode::kShape,
           "{}: argument '{}' must be NHWC [N, H, W, C] (4-D) or channel blocks [N, CB, H, W, block] (5-D), but received {}", op,
           x.name, shape_str(s));
  if (s.size() == 4) {
    PD_CHECK(channels == s[3], ErrorCode::kInvalidArgument, "{}: argument 'channels' = {} must be the channels of NHWC '{}' {}, i.e. {}",
             op, channels, x.name, shape_str(s), s[3]);
    return {s[0], channels, 1, 1};
  }
  const Shape plain = from_channel_blocks(op, x, channels);
  return {plain[0], plain[1], 1, 1};
}

Shape scale_channel_blocks(const char* op, In x, In scale) {
  check_blocked(op, x);
  const Shape& s = x.t.shape();
  const Shape& f = scale.t.shape();
  PD_CHECK(f.size() == 4 && f[2] == 1 && f[3] == 1, ErrorCode::kShape,
           "{}: argument '{}' must be [N, C, 1, 1] (a factor per image and channel), but received {}", op, scale.name, shape_str(f));
  PD_CHECK(f[0] == s[0] || f[0] == 1, ErrorCode::kShape, "{}: argument '{}' {} has {} images, but '{}' {} has {}", op, scale.name,
           shape_str(f), f[0], x.name, shape_str(s), s[0]);
  from_channel_blocks(op, x, f[1]);  // the channels fall in the last block
  return s;
}

Shape gather_channel_blocks(const char* op, InList xs, const std::vector<int64_t>& channels, const std::vector<int64_t>& index) {
  PD_CHECK(!xs.ts.empty() && channels.size() == xs.ts.size(), ErrorCode::kInvalidArgument,
           "{}: argument 'channels' must give the channels of each of the {} tensors of '{}', but has {} values", op, xs.ts.size(),
           xs.name, channels.size());
  PD_CHECK(!index.empty(), ErrorCode::kInvalidArgument, "{}: argument 'index' must name at least one channel", op);
  const Shape& first = xs.ts[0].shape();
  int64_t total = 0;
  for (size_t i = 0; i < xs.ts.size(); ++i) {
    const std::string name = fmt::format("{}[{}]", xs.name, i);
    const In x{name.c_str(), xs.ts[i]};
    check_blocked(op, x);
    const Shape& s = xs.ts[i].shape();
    PD_CHECK(s[0] == first[0] && s[2] == first[2] && s[3] == first[3] && s[4] == first[4], ErrorCode::kShape,
             "{}: argument '{}' {} must have the images, rows, columns and block of '{}[0]' {}", op, name, shape_str(s), xs.name,
             shape_str(first));
    from_channel_blocks(op, x, channels[i]);  // the channels fall in the last block
    total += channels[i];
  }
  for (size_t j = 0; j < index.size(); ++j)
    PD_CHECK(index[j] >= 0 && index[j] < total, ErrorCode::kInvalidArgument,
             "{}: argument 'index'[{}] = {} must name one of the inputs' {} channels, i.e. be in [0, {})", op, j, index[j], total, total);
  const auto out = static_cast<int64_t>(index.size());
  return {first[0], (out + first[4] - 1) / first[4], first[2], first[3], first[4]};
}

Shape blocked_conv2d(const char* op, In x, In weight, In bias, In residual, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t block, int64_t groups) {
  check_block(op, block);
  const Shape& s = x.t.shape();
  PD_CHECK(s.size() == 4 || s.size() == 5, ErrorCode::kShape,
           "{}: argument '{}' must be blocked [N, ceil(C_in / block), H, W, block] or plain [N, C_in, H, W], but received {}", op,
           x.name, shape_str(s));
  PD_CHECK(weight.t.dim() == 4, ErrorCode::kShape, "{}: argument '{}' must be [C_out, C_in / groups, kH, kW] (4-D), but received {}",
           op, weight.name, shape_str(weight.t.shape()));
  const Shape& ws = weight.t.shape();
  Shape nchw = s;
  if (s.size() == 5) {
    PD_CHECK(s[4] == block, ErrorCode::kShape, "{}: argument '{}' {} is in blocks of {}, but the op's block is {}", op, x.name,
             shape_str(s), s[4], block);
    // The input channels are the weight's (the lanes past them, in the last block, are padding).
    const int64_t cin = ws[1] * std::max<int64_t>(groups, 1);
    PD_CHECK(cin > (s[1] - 1) * block && cin <= s[1] * block, ErrorCode::kShape,
             "{}: '{}' {} expects {} input channels (= {} per group x {} groups), which take {} blocks of {}, but '{}' {} has {}",
             op, weight.name, shape_str(ws), cin, ws[1], groups, (cin + block - 1) / block, block, x.name, shape_str(s), s[1]);
    nchw = {s[0], cin, s[2], s[3]};
  }
  // Groups: 1, depthwise (groups = C_in = C_out), groups of whole blocks (RegNet's 8 channels a group in
  // blocks of 8), or two groups of 8 a block of 16 (the same on AVX-512: grouped_conv_rule.h).
  const bool depthwise = groups == nchw[1] && ws[0] == groups && ws[1] == 1;
  const bool whole = groups > 1 && ws[1] % block == 0 && ws[0] % groups == 0 && (ws[0] / groups) % block == 0;
  const bool halves = block == 2 * kernels::kGroupWidth && kernels::grouped8_fits(ws[1] * groups, ws[0], groups, ws[2], ws[3]);
  PD_CHECK(groups == 1 || depthwise || whole || halves, ErrorCode::kInvalidArgument,
           "{}: groups = {} must be 1, depthwise (the input channels {}, with weight [C, 1, kH, kW]), groups of whole "
           "blocks of {} channels in and out, or groups of 8 in blocks of 16, but the weight is {}", op, groups, nchw[1], block, shape_str(ws));
  const Shape plain = conv2d_nchw(op, x.name, nchw, weight, bias, stride, padding, dilation, groups);
  // C_out need not fill the last block: its lanes past C_out are zero.
  const Shape out = {plain[0], (plain[1] + block - 1) / block, plain[2], plain[3], block};
  if (residual.t.defined())
    PD_CHECK(residual.t.shape() == out, ErrorCode::kShape, "{}: argument '{}' must have the output's shape {}, but received {}",
             op, residual.name, shape_str(out), shape_str(residual.t.shape()));
  return out;
}

Shape gather_channels(const char* op, InList xs, const std::vector<int64_t>& index) {
  PD_CHECK(!xs.ts.empty(), ErrorCode::kInvalidArgument, "{}: argument '{}' must hold at least one tensor", op, xs.name);
  PD_CHECK(!index.empty(), ErrorCode::kInvalidArgument, "{}: argument 'index' must name at least one channel", op);
  const Shape& first = xs.ts[0].shape();
  int64_t total = 0;
  for (size_t i = 0; i < xs.ts.size(); ++i) {
    const Shape& s = xs.ts[i].shape();
    PD_CHECK(s.size() == 4, ErrorCode::kShape, "{}: argument '{}[{}]' must be 4-D [N, H, W, C] (NHWC), but received {}", op, xs.name, i,
             shape_str(s));
    PD_CHECK(s[0] == first[0] && s[1] == first[1] && s[2] == first[2], ErrorCode::kShape,
             "{}: argument '{}[{}]' {} must have the images, rows and columns of '{}[0]' {}", op, xs.name, i, shape_str(s), xs.name,
             shape_str(first));
    total += s[3];
  }
  for (size_t j = 0; j < index.size(); ++j)
    PD_CHECK(index[j] >= 0 && index[j] < total, ErrorCode::kInvalidArgument,
             "{}: argument 'index'[{}] = {} must name one of the inputs' {} channels, i.e. be in [0, {})", op, j, index[j], total, total);
  return {first[0], first[1], first[2], static_cast<int64_t>(index.size())};
}

}  // namespace pd::infer
