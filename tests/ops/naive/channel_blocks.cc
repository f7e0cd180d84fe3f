// Naive references for the channel-blocked layout: element (n, c, y, x) of [N, C, H, W] sits at
// (n, c / b, y, x, c % b) of [N, ceil(C / b), H, W, b], zeros in the lanes past C. blocked_conv2d is the
// naive fused_conv2d between the two.
#include "naive_util.h"

namespace {
using namespace pd::naive;
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
