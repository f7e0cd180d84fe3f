// Naive references for the channel-blocked layout: element (n, c, y, x) of [N, C, H, W] sits at
// (n, c / b, y, x, c % b) of [N, ceil(C / b), H, W, b], zeros in the lanes past C. blocked_conv2d is the
// naive fused_conv2d between the two.
#include "naive_util.h"

namespace {
using namespace pd::naive;
}  // namespace

PD_NAIVE_REF(to_channel_blocks) { return {blocks_of(in[0][0], get<int64_t>(attrs, "block", 16))}; }
PD_NAIVE_REF(from_channel_blocks) { return {plain_of(in[0][0], get<int64_t>(attrs, "channels", 0))}; }

// scale_channel_blocks: the plain map times the factors, blocked again (zero lanes past C).
PD_NAIVE_REF(scale_channel_blocks) {
  const pd::Tensor& x = in[0][0];
  const pd::Tensor& f = in[1][0];
  const Ints fs = f.shape();
  const pd::Tensor plain = plain_of(x, fs[1]);
  const Ints s = plain.shape();
  Reals v = vals(plain);
  const Reals fv = vals(f);
  for (int64_t i = 0; i < numel_of(s); ++i) {
    const Ints at = unravel(i, s);
    v[static_cast<size_t>(i)] *= fv[static_cast<size_t>((fs[0] == 1 ? 0 : at[0]) * fs[1] + at[1])];
  }
  return {blocks_of(make(v, s), x.shape()[4])};
}

PD_NAIVE_REF(blocked_conv2d) {
  const int64_t b = get<int64_t>(attrs, "block", 16);
  const pd::Tensor& x = in[0][0];
  const pd::Tensor& w = in[1][0];
  pd::BoxedInputs plain = in;
  plain[0] = {x.dim() == 5 ? plain_of(x, w.shape()[1] * get<int64_t>(attrs, "groups", 1)) : x};
  if (plain.size() > 3 && !plain[3].empty() && plain[3][0].defined()) plain[3] = {plain_of(plain[3][0], w.shape()[0])};
  pd::AttrMap conv_attrs = attrs;
  conv_attrs.erase("block");
  const pd::Tensor y = (*pd::test::find_naive("fused_conv2d"))(plain, conv_attrs)[0];
  return {blocks_of(y, b)};
}

// The mean of each channel over H x W, in double, reading element (n, y, x, c) of NHWC or (n, c / b, y,
// x, c % b) of the blocks directly (not through plain_of, which the blocked sample would share with
// from_channel_blocks' check).
PD_NAIVE_REF(global_avg_pool_nhwc) {
  const pd::Tensor& x = in[0][0];
  const Ints s = x.shape();
  const int64_t C = get<int64_t>(attrs, "channels", 0), N = s[0];
  const bool blocked = s.size() == 5;
  const int64_t H = blocked ? s[2] : s[1], W = blocked ? s[3] : s[2], b = blocked ? s[4] : 0;
  const Reals xv = vals(x);
  Reals out(static_cast<size_t>(N * C), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      for (int64_t y = 0; y < H; ++y)
        for (int64_t w = 0; w < W; ++w)
          sum += xv[blocked ? (((n * s[1] + c / b) * H + y) * W + w) * b + c % b : ((n * H + y) * W + w) * C + c];
      out[n * C + c] = sum / static_cast<double>(H * W);
    }
  return {make(out, {N, C, 1, 1})};
}

// gather_channel_blocks: the inputs' real channels joined in order on plain tensors, output channel j
// channel index[j] of them, blocked again.
PD_NAIVE_REF(gather_channel_blocks) {
  const Ints channels = get<Ints>(attrs, "channels", {});
  const Ints index = get<Ints>(attrs, "index", {});
  const int64_t b = in[0][0].shape()[4];
  std::vector<Reals> plain;
  for (size_t k = 0; k < in[0].size(); ++k) plain.push_back(vals(plain_of(in[0][k], channels[k])));
  const Ints s = in[0][0].shape();
  const int64_t N = s[0], HW = s[2] * s[3], C = static_cast<int64_t>(index.size());
  Reals out(static_cast<size_t>(N * C * HW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < C; ++j) {
      int64_t c = index[static_cast<size_t>(j)], k = 0;
      while (c >= channels[static_cast<size_t>(k)]) c -= channels[static_cast<size_t>(k++)];
      for (int64_t p = 0; p < HW; ++p)
        out[static_cast<size_t>((n * C + j) * HW + p)] = plain[static_cast<size_t>(k)][static_cast<size_t>((n * channels[static_cast<size_t>(k)] + c) * HW + p)];
    }
  return {blocks_of(make(out, {N, C, s[2], s[3]}), b)};
}

// gather_channels: per pixel, output channel j is channel index[j] of the inputs' channels joined in order.
PD_NAIVE_REF(gather_channels) {
  const Ints index = get<Ints>(attrs, "index", {});
  const Ints s = in[0][0].shape();
  const int64_t pixels = s[0] * s[1] * s[2], C = static_cast<int64_t>(index.size());
  std::vector<Reals> xs;
  Ints channels;
  for (const pd::Tensor& x : in[0]) xs.push_back(vals(x)), channels.push_back(x.shape()[3]);
  Reals out(static_cast<size_t>(pixels * C));
  for (int64_t j = 0; j < C; ++j) {
    int64_t c = index[static_cast<size_t>(j)], k = 0;
    while (c >= channels[static_cast<size_t>(k)]) c -= channels[static_cast<size_t>(k++)];
    for (int64_t p = 0; p < pixels; ++p)
      out[static_cast<size_t>(p * C + j)] = xs[static_cast<size_t>(k)][static_cast<size_t>(p * channels[static_cast<size_t>(k)] + c)];
  }
  return {make(out, {s[0], s[1], s[2], C})};
}
