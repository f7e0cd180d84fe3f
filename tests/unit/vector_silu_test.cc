// silu on the channel-block kernels' outputs (kernels/cpu/ref/isa/vector_activation.h) runs through
// simd.h's sigmoid: its own polynomial for exp(-x) and a clamp in place of exp's tail handling. The op
// tests see it on values of a few units; this checks it against the double-precision silu across the
// float range: dense in [-20, 20], where the sigmoid is neither 0 nor 1 in float, and on the tails,
// infinities and NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/common/simd.h"
#include "pd/core/cpu_features.h"

#if defined(__x86_64__)
namespace {

using pd::kernels::simd::Avx2;
using pd::kernels::simd::Avx512;

[[gnu::target("avx512f,avx2,fma")]] void silu_avx512(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i + 16 <= n; i += 16) Avx512::store(y + i, Avx512::mul(Avx512::load(x + i), Avx512::sigmoid(Avx512::load(x + i))));
}
[[gnu::target("avx2,fma")]] void silu_avx2(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i + 8 <= n; i += 8) Avx2::store(y + i, Avx2::mul(Avx2::load(x + i), Avx2::sigmoid(Avx2::load(x + i))));
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

}  // namespace

TEST_CASE("the vector kernels' silu is within float rounding of silu across the float range", "[kernels]") {
  const bool avx512 = pd::cpu_has_avx512(), avx2 = pd::cpu_has_avx2_fma();
  if (!avx2) {
    WARN("no AVX2 on this CPU: the vector kernels do not run here");
    return;
  }
  std::vector<float> x;
  for (int64_t i = -200000; i < 200000; ++i) x.push_back(static_cast<float>(i) * 1e-4f);  // [-20, 20)
  for (float v : {-1e30f, -1e5f, -200.f, -100.f, -88.5f, -87.3f, -50.f, 50.f, 87.3f, 88.5f, 100.f, 1e5f, 3e38f, 1e-30f, -1e-30f, 0.f, -0.f})
    x.push_back(v);
  while (x.size() % 16 != 0) x.push_back(1.f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float edges[16] = {inf, nan, -nan, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, 11.f, 12.f, 13.f};
  std::vector<float> y(x.size());
  for (int form = 0; form < 2; ++form) {
    if (form == 0 && !avx512) continue;
    CAPTURE(form == 0 ? "AVX-512" : "AVX2");
    (form == 0 ? silu_avx512 : silu_avx2)(x.data(), static_cast<int64_t>(x.size()), y.data());
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = silu(x[i]);
      // Relative where silu is away from 0; near 0 (x near 0, or x below -20 where silu is tiny) absolute.
      const double err = std::fabs(y[i] - want) / std::max(std::fabs(want), 1e-30);
      if (std::fabs(want) > 1e-6) worst = std::max(worst, err);
      else REQUIRE(std::fabs(y[i] - want) <= 1e-6);
    }
    CHECK(worst < 1e-6);
    float out[16];
    (form == 0 ? silu_avx512 : silu_avx2)(edges, 16, out);
    CHECK(out[0] == inf);  // x sigmoid(x) = x for a large x
    CHECK(std::isnan(out[1]));
    CHECK(std::isnan(out[2]));
  }
}
#endif
