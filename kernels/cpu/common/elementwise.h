// Elementwise helpers for the CPU kernels: NumPy-style broadcast iteration and flat unary maps.
// Every tensor handed to these is contiguous (row-major), as the kernel contract guarantees.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "pd/core/shape.h"
#include "pd/core/tensor.h"
#include "cpu/common/parallel.h"

namespace pd::kernels::cpu {

namespace detail {
template <size_t N, typename F, size_t... I>
inline void call_indexed(F& f, int64_t o, const std::array<int64_t, N>& idx, std::index_sequence<I...>) {
  f(o, idx[I]...);
}
}  // namespace detail

// Calls f(out_index, in_index_0, ..., in_index_{N-1}) for every element of `out_shape`, in row-major
// order. Input shapes are right-aligned against `out_shape` and must broadcast to it (already
// validated by shape inference); a dim of extent 1 in an input repeats that element.
template <size_t N, typename F>
void broadcast_for_each(const std::array<const Shape*, N>& ins, const Shape& out_shape, F&& f) {
  const int64_t n = shape_numel(out_shape);
  if (n == 0) return;
  const auto seq = std::make_index_sequence<N>{};
  // Fast paths: every input either has the output's shape (index = o) or one element (index = 0).
  bool simple = true;
  std::array<int64_t, N> step{};
  for (size_t k = 0; k < N; ++k) {
    if (*ins[k] == out_shape) {
      step[k] = 1;
    } else if (shape_numel(*ins[k]) == 1) {
      step[k] = 0;
    } else {
      simple = false;
    }
  }
  if (simple) {
    std::array<int64_t, N> idx{};
    for (int64_t o = 0; o < n; ++o) {
      for (size_t k = 0; k < N; ++k) idx[k] = o * step[k];
      detail::call_indexed<N>(f, o, idx, seq);
    }
    return;
  }
  // General path: odometer over the output with per-input strides (0 on broadcast dims).
  const int64_t nd = static_cast<int64_t>(out_shape.size());
  std::vector<std::array<int64_t, N>> strides(static_cast<size_t>(nd));
  for (size_t k = 0; k < N; ++k) {
    const Shape& s = *ins[k];
    const int64_t lead = nd - static_cast<int64_t>(s.size());
    int64_t stride = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      const int64_t sd = d - lead;
      const int64_t extent = sd >= 0 ? s[sd] : 1;
      strides[d][k] = extent == 1 ? 0 : stride;
      stride *= extent;
    }
  }
  std::vector<int64_t> counter(static_cast<size_t>(nd), 0);
  std::array<int64_t, N> off{};
  for (int64_t o = 0; o < n; ++o) {
    detail::call_indexed<N>(f, o, off, seq);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++counter[d] < out_shape[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += strides[d][k];
        break;
      }
      for (size_t k = 0; k < N; ++k) off[k] -= strides[d][k] * (out_shape[d] - 1);
      counter[d] = 0;
    }
  }
}

// out[i] = f(x[i]) over all elements (out may be x); TOut defaults to the input type. Large tensors are
// split into chunks across the threads, and each chunk is one SIMD loop (GCC's -O2 cost model would
// leave it scalar): relu on 16M floats went from 79 ms to the memory bound.
template <typename TIn, typename TOut = TIn, typename F>
void unary_map(const Tensor& x, Tensor& out, F&& f) {
  const TIn* xd = x.data<TIn>();
  TOut* od = out.data<TOut>();
  const int64_t n = out.numel();
  constexpr int64_t kChunk = int64_t{1} << 14;
  parallel_for((n + kChunk - 1) / kChunk, kChunk, [&](int64_t c) {
    const int64_t end = std::min(n, (c + 1) * kChunk);
#pragma omp simd
    for (int64_t i = c * kChunk; i < end; ++i) od[i] = f(xd[i]);
  });
}

// Whether y (right-aligned against out) is out's extents on a leading run [0, a) and a trailing run
// [b, n) and 1 between, with a broadcast in between: out as [outer, mid, inner] and y as [outer, inner]
// (a per-channel gate: [N, C, 1, 1] in NCHW, mid = H W, inner = 1; [N, 1, 1, C] in NHWC, inner = C).
inline bool row_broadcast(const Shape& y, const Shape& out, int64_t& outer, int64_t& mid, int64_t& inner) {
  const size_t n = out.size();
  if (y.size() > n) return false;
  const size_t pad = n - y.size();
  const auto ext = [&](size_t d) { return d < pad ? int64_t{1} : y[d - pad]; };
  size_t a = 0, b = n;
  while (a < n && ext(a) == out[a]) ++a;
  while (b > a && ext(b - 1) == out[b - 1]) --b;
  bool broadcast = false;
  for (size_t d = a; d < b; ++d) {
    if (ext(d) != 1) return false;
    broadcast |= out[d] != 1;
  }
  if (!broadcast) return false;
  const auto product = [&](size_t from, size_t to) {
    int64_t p = 1;
    for (size_t d = from; d < to; ++d) p *= out[d];
    return p;
  };
  outer = product(0, a), mid = product(a, b), inner = product(b, n);
  return true;
}

// od = f(full, other) with full [outer, mid, inner] and other [outer, inner] repeated along mid, a vector
// loop a row: along mid where inner is 1 (other one value a row), else along inner; rows across threads.
template <typename TIn, typename TOut, typename F>
void row_map(const TIn* full, const TIn* other, TOut* od, int64_t outer, int64_t mid, int64_t inner, F&& f) {
  if (inner == 1) {
    parallel_for(outer, mid, [&](int64_t o) {
      const TIn* fr = full + o * mid;
      TOut* orow = od + o * mid;
      const TIn b = other[o];
#pragma omp simd
      for (int64_t i = 0; i < mid; ++i) orow[i] = f(fr[i], b);
    });
    return;
  }
  parallel_for(outer * mid, inner, [&](int64_t r) {
    const TIn* fr = full + r * inner;
    const TIn* orr = other + r / mid * inner;
    TOut* orow = od + r * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) orow[i] = f(fr[i], orr[i]);
  });
}

// Whether y (right-aligned against out) is out's extents on a trailing run of at least kMinBroadcastRun
// values, [lead, n), and on each dim before it out's extent or 1: out as rows of `inner` values, each
// with y's row by strides (Swin's attention mask [1, 64, 1, 49, 49] on [B, 64, 3, 49, 49], which the
// odometer below and oneDNN's reference broadcast ran at 6 ns a value).
constexpr int64_t kMinBroadcastRun = 16;
inline bool run_broadcast(const Shape& y, const Shape& out, size_t& lead, int64_t& inner) {
  const size_t n = out.size();
  if (y.size() > n) return false;
  const size_t pad = n - y.size();
  const auto ext = [&](size_t d) { return d < pad ? int64_t{1} : y[d - pad]; };
  size_t b = n;
  inner = 1;
  while (b > 0 && ext(b - 1) == out[b - 1]) inner *= out[--b];
  if (inner < kMinBroadcastRun || b == 0) return false;
  for (size_t d = 0; d < b; ++d)
    if (ext(d) != 1 && ext(d) != out[d]) return false;
  lead = b;
  return true;
}

// od = f(full, other) with other broadcast as run_broadcast found it: a vector loop a row, rows across
// threads, each row's offset into other from its index (strides 0 along the broadcast dims).
template <typename TIn, typename TOut, typename F>
void runs_map(const TIn* full, const TIn* other, TOut* od, const Shape& other_shape, const Shape& out, size_t lead, int64_t inner,
              F&& f) {
  const size_t pad = out.size() - other_shape.size();
  std::vector<int64_t> stride(lead, 0);
  int64_t s = inner;
  for (size_t d = lead; d-- > 0;) {
    const int64_t e = d < pad ? 1 : other_shape[d - pad];
    stride[d] = e == 1 ? 0 : s;
    s *= e;
  }
  int64_t rows = 1;
  for (size_t d = 0; d < lead; ++d) rows *= out[d];
  parallel_for(rows, inner, [&](int64_t r) {
    int64_t at = 0;
    for (int64_t rest = r, d = static_cast<int64_t>(lead) - 1; d >= 0; --d) {
      at += rest % out[d] * stride[d];
      rest /= out[d];
    }
    const TIn* fr = full + r * inner;
    const TIn* orr = other + at;
    TOut* orow = od + r * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) orow[i] = f(fr[i], orr[i]);
  });
}

// out = f(x, y) with broadcasting; x and y hold TIn, out holds TOut.
template <typename TIn, typename TOut = TIn, typename F>
void binary_map(const Tensor& x, const Tensor& y, Tensor& out, F&& f) {
  const TIn* xd = x.data<TIn>();
  const TIn* yd = y.data<TIn>();
  TOut* od = out.data<TOut>();
  if (x.shape() == out.shape() && y.shape() == out.shape()) {  // no broadcast: unary_map's chunked SIMD loop
    const int64_t n = out.numel();
    constexpr int64_t kChunk = int64_t{1} << 14;
    parallel_for((n + kChunk - 1) / kChunk, kChunk, [&](int64_t c) {
      const int64_t end = std::min(n, (c + 1) * kChunk);
#pragma omp simd
      for (int64_t i = c * kChunk; i < end; ++i) od[i] = f(xd[i], yd[i]);
    });
    return;
  }
  // One operand of out's shape, the other repeated along a run of its extents (row_broadcast): a vector
  // loop a row (the odometer below ran a squeeze-and-excitation gate 8x slower).
  int64_t outer = 0, mid = 0, inner = 0;
  if (x.shape() == out.shape() && row_broadcast(y.shape(), out.shape(), outer, mid, inner))
    return row_map<TIn, TOut>(xd, yd, od, outer, mid, inner, f);
  if (y.shape() == out.shape() && row_broadcast(x.shape(), out.shape(), outer, mid, inner))
    return row_map<TIn, TOut>(yd, xd, od, outer, mid, inner, [&](TIn b, TIn a) { return f(a, b); });
  size_t lead = 0;
  if (x.shape() == out.shape() && run_broadcast(y.shape(), out.shape(), lead, inner))
    return runs_map<TIn, TOut>(xd, yd, od, y.shape(), out.shape(), lead, inner, f);
  if (y.shape() == out.shape() && run_broadcast(x.shape(), out.shape(), lead, inner))
    return runs_map<TIn, TOut>(yd, xd, od, x.shape(), out.shape(), lead, inner, [&](TIn b, TIn a) { return f(a, b); });
  broadcast_for_each<2>({&x.shape(), &y.shape()}, out.shape(),
                        [&](int64_t o, int64_t i, int64_t j) { od[o] = f(xd[i], yd[j]); });
}

}  // namespace pd::kernels::cpu
