// The activations the vector kernels on channel blocks apply on the way out (pointwise_rows.cc,
// depthwise_rows.cc; vector_blocks_fit in block_weights.h lists them), on whole vectors. Included
// inside their PD_TARGET_PUSH region, so it compiles for each instruction set.
#pragma once
#include <type_traits>

#include "elementwise_ops.h"

namespace pd::kernels::reference {

// Always inlined: as a call (GCC's choice for silu's exp), every accumulator of the caller's tile was
// spilled around it, since every vector register is caller-saved.
template <class S, Activation A>
[[gnu::always_inline]] inline typename S::V activate_vector(typename S::V v) {
  // max / min return their second operand for NaN, so NaN passes through as in the reference.
  if constexpr (A == Activation::relu || A == Activation::relu6) v = S::max(S::zero(), v);
  if constexpr (A == Activation::relu6) v = S::min(S::set1(6.f), v);
  // silu: x sigmoid(x); the sigmoid saturates, so a very negative x gives about -0, not NaN.
  if constexpr (A == Activation::silu) v = S::mul(v, S::sigmoid(v));
  // hardswish: x * relu6(x + 3) / 6.
  if constexpr (A == Activation::hardswish)
    v = S::mul(v, S::mul(S::min(S::set1(6.f), S::max(S::zero(), S::add(v, S::set1(3.f)))), S::set1(1.f / 6.f)));
  return v;
}

// f(std::integral_constant<Activation, A>) for the activations above; none for any other (the callers
// have checked that there is none).
template <typename F>
void dispatch_vector_activation(Activation act, F&& f) {
  switch (act) {
    case Activation::relu: return f(std::integral_constant<Activation, Activation::relu>{});
    case Activation::relu6: return f(std::integral_constant<Activation, Activation::relu6>{});
    case Activation::silu: return f(std::integral_constant<Activation, Activation::silu>{});
    case Activation::hardswish: return f(std::integral_constant<Activation, Activation::hardswish>{});
    default: return f(std::integral_constant<Activation, Activation::none>{});
  }
}

}  // namespace pd::kernels::reference
