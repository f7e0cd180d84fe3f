// Naive references for fused_conv2d, fused_linear and winograd_conv2d: the naive conv2d / linear /
// winograd loops of this folder (looked up by name), then the residual (the 4th input) and the
// activation in plain double arithmetic.
#include <stdexcept>

#include "naive_util.h"

namespace {
using namespace pd::naive;

double activate(const std::string& act, double alpha, double v) {
  if (act == "relu") return v > 0 ? v : 0.0;
  if (act == "gelu") return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  if (act == "silu") return v / (1.0 + std::exp(-v));
  if (act == "tanh") return std::tanh(v);
  if (act == "sigmoid") return 1.0 / (1.0 + std::exp(-v));
  if (act == "leaky_relu") return v > 0 ? v : alpha * v;
  if (act == "relu6") return std::min(std::max(v, 0.0), 6.0);
  if (act == "hardswish") return v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
  if (act != "none") throw std::runtime_error("naive reference: no formula for activation '" + act + "'");
  return v;
}

std::vector<pd::Tensor> fused(const char* base, const pd::BoxedInputs& in, const pd::AttrMap& attrs) {
  const pd::test::NaiveRef* ref = pd::test::find_naive(base);
  pd::Tensor y = (*ref)(in, attrs)[0];
  const std::string act = get<std::string>(attrs, "activation", "none");
  const double alpha = get<double>(attrs, "alpha", 0.0);
  Reals v = vals(y);
  if (in.size() > 3 && !in[3].empty() && in[3][0].defined()) {
    const Reals r = vals(in[3][0]);
    for (size_t i = 0; i < v.size(); ++i) v[i] += r[i];
  }
  for (double& e : v) e = activate(act, alpha, e);
  return {make(v, y.shape())};
}
}  // namespace

PD_NAIVE_REF(fused_conv2d) { return fused("conv2d", in, attrs); }
PD_NAIVE_REF(fused_linear) { return fused("linear", in, attrs); }
// A channel-blocked winograd_conv2d (block > 0) is the plain one between to_ and from_channel_blocks.
PD_NAIVE_REF(winograd_conv2d) {
  const int64_t b = get<int64_t>(attrs, "block", 0);
  if (b == 0) return fused("winograd_conv2d_unfused", in, attrs);
  const int64_t k = in[1][0].shape()[2];
  pd::BoxedInputs plain = in;
  plain[0] = {plain_of(in[0][0], in[1][0].shape()[1])};
  if (plain.size() > 3 && !plain[3].empty() && plain[3][0].defined()) plain[3] = {plain_of(plain[3][0], k)};
  return {blocks_of(fused("winograd_conv2d_unfused", plain, attrs)[0], b)};
}

// fused_conv2d_maxpool: the naive fused_conv2d above (conv, bias, activation in double), then the
// naive max_pool2d with the pool_* attributes under max_pool2d's names.
PD_NAIVE_REF(fused_conv2d_maxpool) {
  const pd::Tensor y = (*pd::test::find_naive("fused_conv2d"))(in, attrs)[0];
  pd::AttrMap pool;
  for (const char* name : {"kernel_size", "stride", "padding", "ceil_mode"})
    if (auto it = attrs.find(std::string("pool_") + name); it != attrs.end()) pool[name] = it->second;
  return (*pd::test::find_naive("max_pool2d"))({{y}}, pool);
}
