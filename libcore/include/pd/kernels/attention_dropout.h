// Which attention weights scaled_dot_product_attention's dropout keeps: a pure function of the seed
// and the weight's flat index in [N, H, Lq, Lk], so that backward regenerates the forward's mask
// instead of storing an [Lq, Lk] matrix, and the result does not depend on blocking or threads.
#pragma once
#include <cstdint>

namespace pd::kernels {

inline bool attention_keep(uint64_t seed, uint64_t index, double p) {
  // splitmix64's finaliser over the seed and index mixed together.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 >= p;
}

}  // namespace pd::kernels
