// Naive-loop references for the shape ops: reshape, transpose, flatten, squeeze, unsqueeze, expand,
// slice, concat, split, pad, sum_to, broadcast_reduced.
#include "naive_util.h"

namespace {
using namespace pd::naive;

// out[idx] = v[src(idx)] for every multi-index of `os`; src returns -1 for "fill".
template <typename F>
pd::Tensor gather(const Reals& v, const Ints& os, F src, double fill = 0.0) {
  Reals out(static_cast<size_t>(numel_of(os)), fill);
  for (int64_t f = 0; f < numel_of(os); ++f) {
    int64_t s = src(unravel(f, os));
    if (s >= 0) out[f] = v[s];
  }
  return make(out, os);
}
}  // namespace

PD_NAIVE_REF(reshape) {
  const pd::Tensor& x = in[0][0];
  Ints shape = get<Ints>(attrs, "shape", {});
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) infer = static_cast<int64_t>(i);
    else known *= shape[i];
  }
  if (infer >= 0) shape[infer] = known == 0 ? 0 : x.numel() / known;
  return {make(vals(x), shape)};
}

PD_NAIVE_REF(transpose) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape(), perm = get<Ints>(attrs, "perm", {});
  int64_t nd = static_cast<int64_t>(s.size());
  for (auto& p : perm) p = norm_axis(p, nd);
  Ints os(s.size());
  for (size_t i = 0; i < s.size(); ++i) os[i] = s[perm[i]];
  return {gather(vals(x), os, [&](const Ints& o) {
    Ints idx(s.size());
    for (size_t i = 0; i < s.size(); ++i) idx[perm[i]] = o[i];
    return ravel(idx, s);
  })};
}

PD_NAIVE_REF(flatten) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape();
  if (s.empty()) return {make(vals(x), {1})};
  int64_t nd = static_cast<int64_t>(s.size());
  int64_t a = norm_axis(get<int64_t>(attrs, "start_axis", 0), nd);
  int64_t b = norm_axis(get<int64_t>(attrs, "stop_axis", -1), nd);
  Ints os(s.begin(), s.begin() + a);
  int64_t m = 1;
  for (int64_t i = a; i <= b; ++i) m *= s[i];
  os.push_back(m);
  for (int64_t i = b + 1; i < nd; ++i) os.push_back(s[i]);
  return {make(vals(x), os)};
}

PD_NAIVE_REF(squeeze) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape();
  auto m = reduce_mask(get<Ints>(attrs, "axis", {}), static_cast<int64_t>(s.size()));
  Ints os;
  for (size_t i = 0; i < s.size(); ++i)
    if (!(m[i] && s[i] == 1)) os.push_back(s[i]);
  return {make(vals(x), os)};
}

PD_NAIVE_REF(unsqueeze) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape(), axes = get<Ints>(attrs, "axis", {});
  int64_t ond = static_cast<int64_t>(s.size() + axes.size());
  std::vector<bool> ins(static_cast<size_t>(ond), false);
  for (int64_t a : axes) ins[norm_axis(a, ond)] = true;
  Ints os;
  size_t k = 0;
  for (int64_t i = 0; i < ond; ++i) os.push_back(ins[i] ? 1 : s[k++]);
  return {make(vals(x), os)};
}

PD_NAIVE_REF(expand) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape(), os = get<Ints>(attrs, "shape", {});
  size_t off = os.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (os[off + i] == -1) os[off + i] = s[i];
  return {gather(vals(x), os, [&](const Ints& o) {
    Ints idx(s.size());
    for (size_t i = 0; i < s.size(); ++i) idx[i] = s[i] == 1 ? 0 : o[off + i];
    return ravel(idx, s);
  })};
}

PD_NAIVE_REF(slice) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape();
  Ints axes = get<Ints>(attrs, "axes", {}), starts = get<Ints>(attrs, "starts", {}), ends = get<Ints>(attrs, "ends", {});
  Ints steps = get<Ints>(attrs, "steps", {});
  int64_t nd = static_cast<int64_t>(s.size());
  Ints st0(s.size(), 0), step(s.size(), 1), os = s;
  for (size_t j = 0; j < axes.size(); ++j) {
    int64_t a = norm_axis(axes[j], nd), dim = s[a];
    int64_t stp = steps.empty() ? 1 : steps[j];
    int64_t b = starts[j], e = ends[j];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    int64_t lo = stp > 0 ? 0 : -1, hi = stp > 0 ? dim : dim - 1;
    b = std::clamp(b, lo, hi);
    e = std::clamp(e, lo, hi);
    int64_t cnt = stp > 0 ? (e - b + stp - 1) / stp : (b - e + (-stp) - 1) / (-stp);
    os[a] = std::max<int64_t>(0, cnt);
    st0[a] = b;
    step[a] = stp;
  }
  return {gather(vals(x), os, [&](const Ints& o) {
    Ints idx(s.size());
    for (size_t i = 0; i < s.size(); ++i) idx[i] = st0[i] + o[i] * step[i];
    return ravel(idx, s);
  })};
}

PD_NAIVE_REF(concat) {
  const auto& xs = in[0];
  Ints s0 = xs[0].shape();
  int64_t a = norm_axis(get<int64_t>(attrs, "axis", 0), static_cast<int64_t>(s0.size()));
  Ints os = s0;
  os[a] = 0;
  std::vector<Reals> vs;
  std::vector<int64_t> begin;
  for (const auto& t : xs) {
    begin.push_back(os[a]);
    os[a] += t.shape()[a];
    vs.push_back(vals(t));
  }
  Reals out(static_cast<size_t>(numel_of(os)), 0.0);
  for (int64_t f = 0; f < numel_of(os); ++f) {
    Ints idx = unravel(f, os);
    size_t k = 0;
    while (k + 1 < xs.size() && idx[a] >= begin[k + 1]) ++k;
    // skip inputs with zero extent along a that share a begin
    while (idx[a] - begin[k] >= xs[k].shape()[a]) ++k;
    idx[a] -= begin[k];
    out[f] = vs[k][ravel(idx, xs[k].shape())];
  }
  return {make(out, os)};
}

PD_NAIVE_REF(split) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape(), sec = get<Ints>(attrs, "sections", {});
  int64_t a = norm_axis(get<int64_t>(attrs, "axis", 0), static_cast<int64_t>(s.size()));
  int64_t n = s[a];
  Ints sizes;
  if (sec.size() == 1) {
    sizes.assign(static_cast<size_t>(sec[0]), n / sec[0]);
  } else {
    int64_t known = 0, unk = -1;
    for (size_t i = 0; i < sec.size(); ++i) {
      if (sec[i] == -1) unk = static_cast<int64_t>(i);
      else known += sec[i];
    }
    sizes = sec;
    if (unk >= 0) sizes[unk] = n - known;
  }
  Reals v = vals(x);
  std::vector<pd::Tensor> outs;
  int64_t begin = 0;
  for (int64_t sz : sizes) {
    Ints os = s;
    os[a] = sz;
    outs.push_back(gather(v, os, [&](const Ints& o) {
      Ints idx = o;
      idx[a] += begin;
      return ravel(idx, s);
    }));
    begin += sz;
  }
  return outs;
}

PD_NAIVE_REF(pad) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape(), pads = get<Ints>(attrs, "pads", {});
  double value = get<double>(attrs, "value", 0.0);
  size_t nd = s.size();
  Ints lo(nd, 0), os = s;
  for (size_t j = 0; j * 2 < pads.size(); ++j) {
    size_t d = nd - 1 - j;
    lo[d] = pads[2 * j];
    os[d] = s[d] + pads[2 * j] + pads[2 * j + 1];
  }
  return {gather(
      vals(x), os,
      [&](const Ints& o) -> int64_t {
        Ints idx(nd);
        for (size_t i = 0; i < nd; ++i) {
          idx[i] = o[i] - lo[i];
          if (idx[i] < 0 || idx[i] >= s[i]) return -1;
        }
        return ravel(idx, s);
      },
      value)};
}

PD_NAIVE_REF(sum_to) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape(), ts = get<Ints>(attrs, "shape", {});
  Reals v = vals(x), out(static_cast<size_t>(numel_of(ts)), 0.0);
  size_t off = s.size() - ts.size();
  for (int64_t f = 0; f < numel_of(s); ++f) {
    Ints idx = unravel(f, s);
    Ints t(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) t[i] = ts[i] == 1 ? 0 : idx[off + i];
    out[ravel(t, ts)] += v[f];
  }
  return {make(out, ts)};
}

PD_NAIVE_REF(broadcast_reduced) {
  const pd::Tensor& x = in[0][0];
  Ints os = get<Ints>(attrs, "shape", {});
  auto m = reduce_mask(get<Ints>(attrs, "axis", {}), static_cast<int64_t>(os.size()));
  return {gather(vals(x), os, [&](const Ints& o) { return reduced_index(o, os, m); })};
}
