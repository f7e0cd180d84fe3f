// Ops with no tensor input on cuda:0: a DefaultPlaceGuard sends them there, in every dtype the CPU
// has plus f16 / bf16, with the reference's values; the guard restores the previous place.
#include <catch2/catch.hpp>

#include <cmath>

#include "pd/pd.h"

using pd::DType;
using pd::Place;
using pd::Tensor;

namespace {

Tensor on_cpu_f64(const Tensor& t) { return pd::ops::cast(t.to(Place::cpu()), DType::f64); }

}  // namespace

TEST_CASE("gpu: the default place puts creation ops on the GPU and is restored after", "[gpu][creation]") {
  REQUIRE(pd::default_place() == Place::cpu());
  {
    const pd::DefaultPlaceGuard guard(Place::cuda(0));
    CHECK(pd::ops::zeros({2, 3}).place() == Place::cuda(0));
    {
      const pd::DefaultPlaceGuard inner(Place::cpu());
      CHECK(pd::ops::ones({2}).place() == Place::cpu());
    }
    CHECK(pd::default_place() == Place::cuda(0));
  }
  CHECK(pd::default_place() == Place::cpu());
  CHECK(pd::ops::zeros({1}).place() == Place::cpu());
}

TEST_CASE("gpu: full, ones, arange in every dtype match the CPU", "[gpu][creation]") {
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64}) {
    INFO("dtype " << pd::dtype_name(dt));
    // The CPU has no f16 / bf16 creation kernels: its f64 values converted, as its kernels convert.
    const Tensor want_full = pd::ops::cast(pd::ops::full({3, 5}, -2.75, DType::f64), dt);
    const Tensor want_ones = pd::ops::cast(pd::ops::ones({4}, DType::f64), dt);
    const Tensor want_range = pd::ops::cast(pd::ops::arange(-3.0, 7.0, 0.75, DType::f64), dt);
    const pd::DefaultPlaceGuard guard(Place::cuda(0));
    const Tensor full = pd::ops::full({3, 5}, -2.75, dt), ones = pd::ops::ones({4}, dt);
    const Tensor range = pd::ops::arange(-3.0, 7.0, 0.75, dt);
    REQUIRE(full.dtype() == dt);
    CHECK(on_cpu_f64(full).to_vector<double>() == on_cpu_f64(want_full).to_vector<double>());
    CHECK(on_cpu_f64(ones).to_vector<double>() == on_cpu_f64(want_ones).to_vector<double>());
    CHECK(on_cpu_f64(range).to_vector<double>() == on_cpu_f64(want_range).to_vector<double>());
  }
  const pd::DefaultPlaceGuard guard(Place::cuda(0));
  const Tensor flags = pd::ops::cast(pd::ops::full({3}, 2.0, DType::boolean).to(Place::cpu()), DType::i32);
  CHECK(flags.to_vector<int32_t>() == std::vector<int32_t>{1, 1, 1});
}

TEST_CASE("gpu: seeded uniform and normal draw the CPU's values; large fills stay in range", "[gpu][creation][random]") {
  const Tensor u_cpu = pd::ops::uniform({100003}, -1.0, 4.0, 77), n_cpu = pd::ops::normal({100001}, 0.5, 2.0, 78);
  const pd::DefaultPlaceGuard guard(Place::cuda(0));
  const Tensor u = pd::ops::uniform({100003}, -1.0, 4.0, 77).to(Place::cpu());
  const Tensor n = pd::ops::normal({100001}, 0.5, 2.0, 78).to(Place::cpu());
  CHECK(u.to_vector<float>() == u_cpu.to_vector<float>());
  const auto got = n.to_vector<float>(), want = n_cpu.to_vector<float>();
  REQUIRE(got.size() == want.size());
  size_t off = 0;  // the GPU's log / sin / cos may differ from the host's in the last bit of a double
  for (size_t i = 0; i < got.size(); ++i) off += std::abs(got[i] - want[i]) > 1e-6f * (1.0f + std::abs(want[i]));
  CHECK(off == 0);
  // Statistics of the GPU's draws: mean and std within a few standard errors.
  const double mean = pd::ops::mean(pd::ops::cast(n, DType::f64)).item<double>();
  const double sd = pd::ops::std(pd::ops::cast(n, DType::f64)).item<double>();
  CHECK(std::abs(mean - 0.5) < 5 * 2.0 / std::sqrt(100001.0));
  CHECK(std::abs(sd - 2.0) < 0.03);
}
