// max_pool2d's rule, in scalar form, for every kernel that pools or takes its gradient (pool.cc, the
// fused conv + pool kernels, the AVX2 pool gradient), so that they agree on ties and NaN as PyTorch does.
// Each is branch-free: on real data a compare-and-branch per element mispredicts half the time.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace pd::kernels::cpu {

// Where a running max starts (and what padding counts as): -inf, or an integer type's minimum.
template <typename T>
constexpr T max_identity() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}

// The running max: NaN wins and sticks (once m is NaN, v > m stays false).
template <typename T>
inline T nan_max(T m, T v) {
  return ((v > m) | (v != v)) ? v : m;
}

// Whether v is the window max m (a NaN max is matched by a NaN): the gradient goes to the first such v.
template <typename T>
inline bool is_pool_max(T v, T m) {
  return (v == m) | ((v != v) & (m != m));
}

// v where c holds, else +0, by masking the bits: no branch, and no multiplication (an inf or NaN grad
// times 0 would put NaN where the gradient is 0).
template <typename T>
inline T keep_if(bool c, T v) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  Bits b;
  std::memcpy(&b, &v, sizeof b);
  b &= Bits(0) - Bits(c);
  std::memcpy(&v, &b, sizeof v);
  return v;
}

}  // namespace pd::kernels::cpu
