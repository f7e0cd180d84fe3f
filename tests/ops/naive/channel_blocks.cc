// Naive references for the channel-blocked layout: element (n, c, y, x) of [N, C, H, W] sits at
// (n, c / b, y, x, c % b) of [N, ceil(C / b), H, W, b], zeros in the lanes past C. blocked_conv2d is the
// naive fused_conv2d between the two.
#include "naive_util.h"

namespace {
using namespace pd::naive;

pd::Tensor blocks_of(const pd::Tensor& plain, int64_t b) {
  const Ints s = plain.shape();
  const Ints os = {s[0], (s[1] + b - 1) / b, s[2], s[3], b};
  const Reals v = vals(plain);
  Reals out(static_cast<size_t>(numel_of(os)), 0.0);
  for (int64_t f = 0; f < numel_of(s); ++f) {
    const Ints i = unravel(f, s);
    out[ravel({i[0], i[1] / b, i[2], i[3], i[1] % b}, os)] = v[f];
  }
  return make(out, os);
}

pd::Tensor plain_of(const pd::Tensor& blocked, int64_t channels) {
  const Ints s = blocked.shape();
  const Ints os = {s[0], channels, s[2], s[3]};
  const Reals v = vals(blocked);
  Reals out(static_cast<size_t>(numel_of(os)));
  for (int64_t f = 0; f < numel_of(os); ++f) {
    const Ints i = unravel(f, os);
    out[f] = v[ravel({i[0], i[1] / s[4], i[2], i[3], i[1] % s[4]}, s)];
  }
  return make(out, os);
}

}  // namespace

PD_NAIVE_REF(to_channel_blocks) { return {blocks_of(in[0][0], get<int64_t>(attrs, "block", 16))}; }
PD_NAIVE_REF(from_channel_blocks) { return {plain_of(in[0][0], get<int64_t>(attrs, "channels", 0))}; }

PD_NAIVE_REF(blocked_conv2d) {
  const int64_t b = get<int64_t>(attrs, "block", 16);
  const pd::Tensor& x = in[0][0];
  const pd::Tensor& w = in[1][0];
  pd::BoxedInputs plain = in;
  plain[0] = {x.dim() == 5 ? plain_of(x, w.shape()[1]) : x};
  if (plain.size() > 3 && !plain[3].empty() && plain[3][0].defined()) plain[3] = {plain_of(plain[3][0], w.shape()[0])};
  pd::AttrMap conv_attrs = attrs;
  conv_attrs.erase("block");
  const pd::Tensor y = (*pd::test::find_naive("fused_conv2d"))(plain, conv_attrs)[0];
  return {blocks_of(y, b)};
}
