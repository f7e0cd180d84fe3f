// Naive-loop references for conv2d (NCHW or channels_last), conv2d_transpose, max_pool2d, avg_pool2d, adaptive_avg_pool2d (NCHW), max_pool2d_nhwc
// (NHWC or channel blocks).
#include "naive_util.h"

namespace {
using namespace pd::naive;

Ints pair_attr(const pd::AttrMap& attrs, const char* name, Ints def) {
  Ints v = get<Ints>(attrs, name, def);
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

int64_t pool_out(int64_t H, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  int64_t num = H + 2 * p - k;
  if (!ceil_mode) return num / s + 1;
  int64_t out = (num + s - 1) / s + 1;
  if ((out - 1) * s >= H + p) --out;
  return out;
}

struct PoolGeom {
  int64_t N, C, H, W, kh, kw, sh, sw, ph, pw, oh, ow;
};

// x is [N, C, H, W], or [N, H, W, C] with channels_last (or channel blocks [N, G, H, W, L]: N G images
// of L channels).
PoolGeom pool_geom(const pd::Tensor& x, const pd::AttrMap& attrs, bool channels_last = false) {
  PoolGeom g{};
  Ints s = x.shape();
  if (channels_last && s.size() == 5) g.N = s[0] * s[1], g.H = s[2], g.W = s[3], g.C = s[4];
  else if (channels_last) g.N = s[0], g.H = s[1], g.W = s[2], g.C = s[3];
  else g.N = s[0], g.C = s[1], g.H = s[2], g.W = s[3];
  Ints k = pair_attr(attrs, "kernel_size", {});
  Ints st = pair_attr(attrs, "stride", {});
  if (st.empty()) st = k;
  Ints p = pair_attr(attrs, "padding", {0, 0});
  bool ceil_mode = get<bool>(attrs, "ceil_mode", false);
  g.kh = k[0], g.kw = k[1], g.sh = st[0], g.sw = st[1], g.ph = p[0], g.pw = p[1];
  g.oh = pool_out(g.H, g.kh, g.sh, g.ph, ceil_mode);
  g.ow = pool_out(g.W, g.kw, g.sw, g.pw, ceil_mode);
  return g;
}
}  // namespace

// channels_last: the NCHW loops on permuted copies.
PD_NAIVE_REF(conv2d) {
  if (get<bool>(attrs, "channels_last", false)) {
    pd::AttrMap nchw = attrs;
    nchw.erase("channels_last");
    pd::BoxedInputs plain = in;
    plain[0] = {permuted(in[0][0], true)};
    return {permuted((*pd::test::find_naive("conv2d"))(plain, nchw)[0], false)};
  }
  const pd::Tensor& x = in[0][0];
  const pd::Tensor& w = in[1][0];
  bool has_bias = in.size() > 2 && !in[2].empty() && in[2][0].defined();
  Ints st = pair_attr(attrs, "stride", {1, 1}), pd_ = pair_attr(attrs, "padding", {0, 0});
  Ints dl = pair_attr(attrs, "dilation", {1, 1});
  int64_t G = get<int64_t>(attrs, "groups", 1);
  Ints xs = x.shape(), ws = w.shape();
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t CO = ws[0], CIg = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = (H + 2 * pd_[0] - dl[0] * (KH - 1) - 1) / st[0] + 1;
  int64_t OW = (W + 2 * pd_[1] - dl[1] * (KW - 1) - 1) / st[1] + 1;
  Reals xv = vals(x), wv = vals(w), bv;
  if (has_bias) bv = vals(in[2][0]);
  int64_t COg = CO / G;
  Reals out(static_cast<size_t>(N * CO * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < CO; ++co) {
      int64_t g = co / COg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = has_bias ? bv[co] : 0.0;
          for (int64_t ci = 0; ci < CIg; ++ci) {
            int64_t c = g * CIg + ci;
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t ih = oh * st[0] - pd_[0] + kh * dl[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t iw = ow * st[1] - pd_[1] + kw * dl[1];
                if (iw < 0 || iw >= W) continue;
                acc += xv[((n * C + c) * H + ih) * W + iw] * wv[((co * CIg + ci) * KH + kh) * KW + kw];
              }
            }
          }
          out[((n * CO + co) * OH + oh) * OW + ow] = acc;
        }
    }
  (void)C;
  return {make(out, {N, CO, OH, OW})};
}

PD_NAIVE_REF(max_pool2d) {
  const pd::Tensor& x = in[0][0];
  PoolGeom g = pool_geom(x, attrs);
  Reals xv = vals(x);
  Reals out(static_cast<size_t>(g.N * g.C * g.oh * g.ow), 0.0);
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          int64_t ih = oh * g.sh - g.ph + kh;
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            int64_t iw = ow * g.sw - g.pw + kw;
            if (iw < 0 || iw >= g.W) continue;
            m = std::max(m, xv[(nc * g.H + ih) * g.W + iw]);
          }
        }
        out[(nc * g.oh + oh) * g.ow + ow] = m;
      }
  return {make(out, {g.N, g.C, g.oh, g.ow})};
}

PD_NAIVE_REF(max_pool2d_nhwc) {
  const pd::Tensor& x = in[0][0];
  PoolGeom g = pool_geom(x, attrs, true);
  Reals xv = vals(x);
  Reals out(static_cast<size_t>(g.N * g.oh * g.ow * g.C), 0.0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t oh = 0; oh < g.oh; ++oh)
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t ih = oh * g.sh - g.ph; ih < oh * g.sh - g.ph + g.kh; ++ih)
            for (int64_t iw = ow * g.sw - g.pw; iw < ow * g.sw - g.pw + g.kw; ++iw)
              if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) m = std::max(m, xv[((n * g.H + ih) * g.W + iw) * g.C + c]);
          out[((n * g.oh + oh) * g.ow + ow) * g.C + c] = m;
        }
  if (x.dim() == 5) return {make(out, {x.shape()[0], x.shape()[1], g.oh, g.ow, g.C})};
  return {make(out, {g.N, g.oh, g.ow, g.C})};
}

PD_NAIVE_REF(avg_pool2d) {
  const pd::Tensor& x = in[0][0];
  PoolGeom g = pool_geom(x, attrs);
  bool exclusive = get<bool>(attrs, "exclusive", true);
  Reals xv = vals(x);
  Reals out(static_cast<size_t>(g.N * g.C * g.oh * g.ow), 0.0);
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        double sum = 0;
        int64_t count = 0, padded = 0;
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          int64_t ih = oh * g.sh - g.ph + kh;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            int64_t iw = ow * g.sw - g.pw + kw;
            bool in_padded = ih >= -g.ph && ih < g.H + g.ph && iw >= -g.pw && iw < g.W + g.pw;
            if (in_padded) ++padded;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            sum += xv[(nc * g.H + ih) * g.W + iw];
            ++count;
          }
        }
        int64_t div = exclusive ? count : padded;
        out[(nc * g.oh + oh) * g.ow + ow] = div > 0 ? sum / static_cast<double>(div) : 0.0;
      }
  return {make(out, {g.N, g.C, g.oh, g.ow})};
}

PD_NAIVE_REF(adaptive_avg_pool2d) {
  const pd::Tensor& x = in[0][0];
  Ints xs = x.shape();
  Ints os = pair_attr(attrs, "output_size", {});
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OH = os[0], OW = os[1];
  Reals xv = vals(x);
  Reals out(static_cast<size_t>(N * C * OH * OW), 0.0);
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t i = 0; i < OH; ++i) {
      int64_t h0 = (i * H) / OH, h1 = ((i + 1) * H + OH - 1) / OH;
      for (int64_t j = 0; j < OW; ++j) {
        int64_t w0 = (j * W) / OW, w1 = ((j + 1) * W + OW - 1) / OW;
        double sum = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) sum += xv[(nc * H + h) * W + w];
        out[(nc * OH + i) * OW + j] = sum / static_cast<double>((h1 - h0) * (w1 - w0));
      }
    }
  return {make(out, {N, C, OH, OW})};
}

// conv2d_transpose as its definition: each input element scatters its products with the kernel into
// the (strided, dilated, padded) output, written out independently of conv2d_grad_input.
PD_NAIVE_REF(conv2d_transpose) {
  const pd::Tensor &x = in[0][0], &w = in[1][0];
  const Ints xs = x.shape(), ws = w.shape();
  const Ints st = pair_attr(attrs, "stride", {1, 1}), pad = pair_attr(attrs, "padding", {0, 0});
  const Ints op = pair_attr(attrs, "output_padding", {0, 0}), dil = pair_attr(attrs, "dilation", {1, 1});
  const int64_t groups = get<int64_t>(attrs, "groups", 1);
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], cin_g = C / groups, cout_g = ws[1], CO = cout_g * groups;
  const int64_t OH = (H - 1) * st[0] - 2 * pad[0] + dil[0] * (ws[2] - 1) + op[0] + 1;
  const int64_t OW = (W - 1) * st[1] - 2 * pad[1] + dil[1] * (ws[3] - 1) + op[1] + 1;
  const Reals xv = vals(x), wv = vals(w);
  Reals out(static_cast<size_t>(N * CO * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t v = 0; v < W; ++v)
          for (int64_t co = 0; co < cout_g; ++co)
            for (int64_t i = 0; i < ws[2]; ++i)
              for (int64_t j = 0; j < ws[3]; ++j) {
                const int64_t oh = h * st[0] - pad[0] + i * dil[0], ow = v * st[1] - pad[1] + j * dil[1];
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                const int64_t o = (c / cin_g) * cout_g + co;
                out[((n * CO + o) * OH + oh) * OW + ow] += xv[((n * C + c) * H + h) * W + v] * wv[((c * cout_g + co) * ws[2] + i) * ws[3] + j];
              }
  if (in.size() > 2 && !in[2].empty() && in[2][0].defined()) {
    const Reals b = vals(in[2][0]);
    for (int64_t k = 0; k < static_cast<int64_t>(out.size()); ++k) out[k] += b[(k / (OH * OW)) % CO];
  }
  return {make(out, {N, CO, OH, OW})};
}
