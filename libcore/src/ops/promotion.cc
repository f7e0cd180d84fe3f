// Type promotion and the global seed generator.
#include <atomic>
#include <mutex>
#include <random>

#include "pd/ops/op_support.h"

namespace pd {
namespace {

int category(DType t) { return t == DType::boolean ? 0 : is_integral(t) ? 1 : 2; }

// Rank inside a category: the wider (or the more precise) type wins.
int rank(DType t) {
  switch (t) {
    case DType::boolean: return 0;
    case DType::u8: return 1;
    case DType::i8: return 2;
    case DType::i32: return 3;
    case DType::i64: return 4;
    case DType::bf16: return 5;
    case DType::f16: return 6;
    case DType::f32: return 7;
    case DType::f64: return 8;
  }
  return 0;
}

DType wider(DType a, DType b) {
  if ((a == DType::u8 && b == DType::i8) || (a == DType::i8 && b == DType::u8)) return DType::i32;
  if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
  return rank(a) >= rank(b) ? a : b;
}

std::mutex g_seed_mu;
std::mt19937_64 g_seed_gen(0x5eed);

}  // namespace

DType promote_types(std::initializer_list<const Tensor*> inputs) {
  bool have_dim = false, have_scalar = false;
  DType dim_t = DType::boolean, scalar_t = DType::boolean;
  for (const Tensor* t : inputs) {
    if (!t->defined()) continue;
    if (t->dim() > 0) {
      dim_t = have_dim ? wider(dim_t, t->dtype()) : t->dtype();
      have_dim = true;
    } else {
      scalar_t = have_scalar ? wider(scalar_t, t->dtype()) : t->dtype();
      have_scalar = true;
    }
  }
  if (!have_dim) return scalar_t;
  if (!have_scalar || category(scalar_t) <= category(dim_t)) return dim_t;
  // A higher-category scalar lifts the result to its category's default (f32 for floats).
  return category(scalar_t) == 2 ? (scalar_t == DType::f64 ? DType::f32 : scalar_t) : scalar_t;
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_seed_mu);
  g_seed_gen.seed(seed);
}

uint64_t next_seed() {
  std::lock_guard<std::mutex> lock(g_seed_mu);
  return g_seed_gen() >> 1;  // non-negative as int64
}

}  // namespace pd
