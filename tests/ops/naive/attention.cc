// Naive-loop reference for scaled_dot_product_attention: the plain formula, one score row at a time,
// softmax over the whole row, in double.
#include "naive_util.h"
#include "pd/kernels/attention_dropout.h"

namespace {
using namespace pd::naive;
}

PD_NAIVE_REF(scaled_dot_product_attention) {
  const pd::Tensor &q = in[0][0], &k = in[1][0], &v = in[2][0];
  const bool has_mask = in.size() > 3 && !in[3].empty() && in[3][0].defined();
  Ints qs = q.shape(), ks = k.shape(), vs = v.shape();
  const int64_t N = qs[0], H = qs[1], Lq = qs[2], E = qs[3], Hk = ks[1], Lk = ks[2], Ev = vs[3];
  double scale = get<double>(attrs, "scale", 0.0);
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(E));
  const bool causal = get<bool>(attrs, "is_causal", false);
  const double p = get<double>(attrs, "dropout_p", 0.0);
  const auto seed = static_cast<uint64_t>(get<int64_t>(attrs, "seed", 0));
  Reals qv = vals(q), kv = vals(k), vv = vals(v), mv;
  Ints ms;
  const bool bool_mask = has_mask && in[3][0].dtype() == pd::DType::boolean;
  if (has_mask) {
    mv = vals(in[3][0]);
    ms = in[3][0].shape();
  }
  // The mask value for score (n, h, i, j), broadcasting the mask's shape from the right.
  auto mask_at = [&](int64_t n, int64_t h, int64_t i, int64_t j) {
    const int64_t idx[4] = {n, h, i, j};
    int64_t f = 0;
    for (size_t d = 0; d < ms.size(); ++d) {
      const int64_t extent = ms[d];
      f = f * extent + (extent == 1 ? 0 : idx[4 - ms.size() + d]);
    }
    return mv[f];
  };
  const double inf = std::numeric_limits<double>::infinity();
  Reals out(static_cast<size_t>(N * H * Lq * Ev), 0.0), lse(static_cast<size_t>(N * H * Lq), -inf);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / (H / Hk);
      for (int64_t i = 0; i < Lq; ++i) {
        Reals s(static_cast<size_t>(Lk));
        double mx = -inf;
        for (int64_t j = 0; j < Lk; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += qv[((n * H + h) * Lq + i) * E + e] * kv[((n * Hk + hk) * Lk + j) * E + e];
          s[j] = dot * scale;
          if (has_mask) {
            if (bool_mask) s[j] = mask_at(n, h, i, j) != 0 ? s[j] : -inf;
            else s[j] += mask_at(n, h, i, j);
          }
          if (causal && j > i) s[j] = -inf;
          mx = std::max(mx, s[j]);
        }
        if (mx == -inf) continue;  // nothing to attend: zeros
        double sum = 0;
        for (int64_t j = 0; j < Lk; ++j) sum += std::exp(s[j] - mx);
        lse[(n * H + h) * Lq + i] = mx + std::log(sum);
        for (int64_t j = 0; j < Lk; ++j) {
          double w = std::exp(s[j] - mx) / sum;
          if (p > 0) {
            const auto index = static_cast<uint64_t>(((n * H + h) * Lq + i) * Lk + j);
            w = pd::kernels::attention_keep(seed, index, p) ? w / (1 - p) : 0.0;
          }
          for (int64_t e = 0; e < Ev; ++e) out[((n * H + h) * Lq + i) * Ev + e] += w * vv[((n * Hk + hk) * Lk + j) * Ev + e];
        }
      }
    }
  return {make(out, {N, H, Lq, Ev}), make(lse, {N, H, Lq})};
}

// qkv_attention: the packed heads unpacked into q, k, v [N, heads, L, E] by index arithmetic, the plain
// formula above, and the result's heads laid side by side again.
PD_NAIVE_REF(qkv_attention) {
  const pd::Tensor& qkv = in[0][0];
  const int64_t H = get<int64_t>(attrs, "num_heads", 1), Hk = get<int64_t>(attrs, "num_kv_heads", 1);
  const Ints s = qkv.shape();
  const int64_t N = s[0], L = s[1], W = s[2], E = W / (H + 2 * Hk);
  const Reals packed = vals(qkv);
  auto heads = [&](int64_t first, int64_t count) {
    Reals r(static_cast<size_t>(N * count * L * E));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < count; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t e = 0; e < E; ++e) r[((n * count + h) * L + l) * E + e] = packed[(n * L + l) * W + (first + h) * E + e];
    return make(r, {N, count, L, E});
  };
  pd::BoxedInputs unpacked{{heads(0, H)}, {heads(H, Hk)}, {heads(H + Hk, Hk)}};
  unpacked.push_back(in.size() > 1 ? in[1] : std::vector<pd::Tensor>{});
  pd::AttrMap sdpa_attrs;
  for (const char* a : {"is_causal", "scale"})
    if (attrs.count(a)) sdpa_attrs[a] = attrs.at(a);
  const Reals o = vals(naive_scaled_dot_product_attention(unpacked, sdpa_attrs)[0]);
  Reals out(static_cast<size_t>(N * L * H * E));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l)
        for (int64_t e = 0; e < E; ++e) out[((n * L + l) * H + h) * E + e] = o[((n * H + h) * L + l) * E + e];
  return {make(out, {N, L, H * E})};
}
