// Naive-loop references for stack, unbind, tile and cumsum.
#include "naive_util.h"

namespace {
using namespace pd::naive;
}

PD_NAIVE_REF(stack) {
  const auto& xs = in[0];
  Ints s = xs[0].shape();
  const int64_t n = static_cast<int64_t>(xs.size());
  const int64_t axis = norm_axis(get<int64_t>(attrs, "axis", 0), static_cast<int64_t>(s.size()) + 1);
  Ints os = s;
  os.insert(os.begin() + axis, n);
  std::vector<Reals> v;
  for (const auto& t : xs) v.push_back(vals(t));
  Reals out(static_cast<size_t>(numel_of(os)));
  for (int64_t f = 0; f < numel_of(os); ++f) {
    Ints o = unravel(f, os);
    const int64_t t = o[axis];
    o.erase(o.begin() + axis);
    out[f] = v[t][s.empty() ? 0 : ravel(o, s)];
  }
  return {make(out, os)};
}

PD_NAIVE_REF(unbind) {
  Ints s = in[0][0].shape();
  Reals v = vals(in[0][0]);
  const int64_t axis = norm_axis(get<int64_t>(attrs, "axis", 0), static_cast<int64_t>(s.size()));
  Ints ps = s;
  ps.erase(ps.begin() + axis);
  std::vector<pd::Tensor> outs;
  for (int64_t t = 0; t < s[axis]; ++t) {
    Reals part(static_cast<size_t>(numel_of(ps)));
    for (int64_t f = 0; f < numel_of(ps); ++f) {
      Ints p = unravel(f, ps);
      p.insert(p.begin() + axis, t);
      part[f] = v[ravel(p, s)];
    }
    outs.push_back(make(part, ps));
  }
  return outs;
}

PD_NAIVE_REF(tile) {
  Ints s = in[0][0].shape(), r = get<Ints>(attrs, "repeats", {});
  Reals v = vals(in[0][0]);
  while (s.size() < r.size()) s.insert(s.begin(), 1);
  while (r.size() < s.size()) r.insert(r.begin(), 1);
  Ints os(s.size());
  for (size_t i = 0; i < s.size(); ++i) os[i] = s[i] * r[i];
  Reals out(static_cast<size_t>(numel_of(os)));
  for (int64_t f = 0; f < numel_of(os); ++f) {
    Ints p = unravel(f, os);
    for (size_t i = 0; i < p.size(); ++i) p[i] %= s[i];
    out[f] = v[ravel(p, s)];
  }
  return {make(out, os)};
}

PD_NAIVE_REF(cumsum) {
  Ints s = in[0][0].shape();
  Reals v = vals(in[0][0]);
  const bool exclusive = get<bool>(attrs, "exclusive", false), reverse = get<bool>(attrs, "reverse", false);
  if (s.empty()) return {make({exclusive ? 0.0 : v[0]}, s)};
  const int64_t axis = norm_axis(get<int64_t>(attrs, "axis", 0), static_cast<int64_t>(s.size()));
  Reals out(v.size(), 0.0);
  for (int64_t f = 0; f < numel_of(s); ++f) {
    const Ints p = unravel(f, s);
    // out[p] = sum of x over the positions q along axis before p (after p when reversed), p itself unless exclusive.
    for (int64_t q = 0; q < s[axis]; ++q) {
      const bool counted = reverse ? (q > p[axis] || (!exclusive && q == p[axis])) : (q < p[axis] || (!exclusive && q == p[axis]));
      if (!counted) continue;
      Ints src = p;
      src[axis] = q;
      out[f] += v[ravel(src, s)];
    }
  }
  return {make(out, s)};
}
