// Small helpers shared by the naive-loop references (tests/ops/naive/*.cc).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "op_test_harness.h"

namespace pd::naive {

// Attribute `name` as T, or `def` when absent. Numbers convert between int64/double/bool.
template <typename T>
T get(const AttrMap& attrs, const std::string& name, T def) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return def;
  const AttrValue& v = it->second;
  if constexpr (std::is_same_v<T, double>) {
    if (auto d = std::get_if<double>(&v)) return *d;
    if (auto i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    if (auto b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
    return def;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (auto i = std::get_if<int64_t>(&v)) return *i;
    if (auto d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
    if (auto b = std::get_if<bool>(&v)) return *b ? 1 : 0;
    return def;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (auto b = std::get_if<bool>(&v)) return *b;
    if (auto i = std::get_if<int64_t>(&v)) return *i != 0;
    if (auto d = std::get_if<double>(&v)) return *d != 0;
    return def;
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    if (auto d = std::get_if<std::vector<double>>(&v)) return *d;
    if (auto i = std::get_if<std::vector<int64_t>>(&v)) return std::vector<double>(i->begin(), i->end());
    return def;
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    if (auto i = std::get_if<std::vector<int64_t>>(&v)) return *i;
    if (auto d = std::get_if<std::vector<double>>(&v)) {
      std::vector<int64_t> r;
      for (double x : *d) r.push_back(static_cast<int64_t>(x));
      return r;
    }
    return def;
  } else {
    if (auto p = std::get_if<T>(&v)) return *p;
    return def;
  }
}

using Ints = std::vector<int64_t>;
using Reals = std::vector<double>;

inline int64_t numel_of(const Ints& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline Ints strides_of(const Ints& s) {
  Ints st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Multi-index of flat position `flat` in a row-major array of shape `s`.
inline Ints unravel(int64_t flat, const Ints& s) {
  Ints idx(s.size(), 0);
  for (int64_t i = static_cast<int64_t>(s.size()) - 1; i >= 0; --i) {
    if (s[i] == 0) return idx;
    idx[i] = flat % s[i];
    flat /= s[i];
  }
  return idx;
}

inline int64_t ravel(const Ints& idx, const Ints& s) {
  int64_t f = 0;
  for (size_t i = 0; i < s.size(); ++i) f = f * s[i] + idx[i];
  return f;
}

inline int64_t norm_axis(int64_t a, int64_t ndim) {
  if (a < 0) a += ndim;
  return a;
}

// Reduction mask: axes [] = all axes; negative axes wrap.
inline std::vector<bool> reduce_mask(const Ints& axes, int64_t ndim) {
  std::vector<bool> m(static_cast<size_t>(ndim), axes.empty());
  for (int64_t a : axes) m[static_cast<size_t>(norm_axis(a, ndim))] = true;
  return m;
}

inline Ints reduced_shape(const Ints& s, const std::vector<bool>& m, bool keepdim) {
  Ints r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!m[i]) r.push_back(s[i]);
    else if (keepdim) r.push_back(1);
  }
  return r;
}

// Flat index into the keepdim-reduced array (row-major) for input multi-index idx.
inline int64_t reduced_index(const Ints& idx, const Ints& s, const std::vector<bool>& m) {
  int64_t f = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (m[i]) continue;
    f = f * s[i] + idx[i];
  }
  return f;
}

inline Tensor make(const Reals& v, const Ints& s) { return Tensor::from_vector<double>(v, s); }

inline Reals vals(const Tensor& t) { return t.to_vector<double>(); }

// Element (n, c, y, x) of [N, C, H, W] at (n, c / b, y, x, c % b) of [N, ceil(C / b), H, W, b], zeros in
// the lanes past C (to_channel_blocks), and back (from_channel_blocks).
inline Tensor blocks_of(const Tensor& plain, int64_t b) {
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

inline Tensor plain_of(const Tensor& blocked, int64_t channels) {
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

// [N, H, W, C] -> [N, C, H, W] (to_nchw) or back, by index arithmetic, in double.
inline Tensor permuted(const Tensor& t, bool to_nchw) {
  if (!t.defined()) return t;
  const Ints& s = t.shape();
  const int64_t N = s[0], A = s[1], B = s[2], C = s[3];  // to_nchw: A, B, C = H, W, C; else C, H, W
  const Reals v = vals(t);
  Reals out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t from = ((n * A + a) * B + b) * C + c;
          const int64_t to = to_nchw ? ((n * C + c) * A + a) * B + b : ((n * B + b) * C + c) * A + a;
          out[static_cast<size_t>(to)] = v[static_cast<size_t>(from)];
        }
  return make(out, to_nchw ? Ints{N, C, A, B} : Ints{N, B, C, A});
}

}  // namespace pd::naive
