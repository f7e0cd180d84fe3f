// Integer arithmetic that wraps around (two's complement), as NumPy and PyTorch integers do. Signed
// overflow is undefined behaviour in C++, so sums, products and negations of integer tensors are done
// on unsigned values and converted back (modular since C++20). UBSan found the first of these: an
// int64 product of two ONNX constants overflowing while the importer folded it.
#pragma once
#include <type_traits>

namespace pd::kernels::cpu {

// The unsigned type integer T is computed in: at least as wide as unsigned int, so that the operation
// itself is not done on a promoted (signed) int.
template <typename T>
using Wrapping = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T, typename Op>
T wrapping(T a, T b, Op op) {
  if constexpr (kWraps<T>)
    return static_cast<T>(op(static_cast<Wrapping<T>>(a), static_cast<Wrapping<T>>(b)));
  else
    return static_cast<T>(op(a, b));
}

template <typename T>
T wrapping_neg(T a) {
  if constexpr (kWraps<T>)
    return static_cast<T>(Wrapping<T>(0) - static_cast<Wrapping<T>>(a));
  else
    return static_cast<T>(-a);
}

// Accumulator of a sum or product of T: double for floating types, a 64-bit unsigned value for
// integers (wraps like the final store into T would).
template <typename T>
using WideAcc = std::conditional_t<std::is_floating_point_v<T>, double, unsigned long long>;

}  // namespace pd::kernels::cpu
