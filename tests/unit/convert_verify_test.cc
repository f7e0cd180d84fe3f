// pd-convert --verify's comparison (tools/pd-convert/verify.cc): an element is within tolerance when
// |ours - reference| <= atol + rtol * max(|reference|, 1% of the output's largest magnitude), so that an
// element which sums to near zero from terms of the output's scale is judged at that scale.
#include <catch2/catch.hpp>

#include <cmath>

#include "pd/ir/program.h"
#include "verify.h"

namespace pd {
namespace {

// A program whose only use here is its one output's name.
ir::Program one_output() {
  ir::Program p;
  p.mark_output(p.add_input("x", {DType::f32, {1, 4}}), "logits");
  return p;
}

converter::OutputDiff diff_of(const std::vector<float>& ours, const std::vector<float>& reference, double atol, double rtol) {
  const std::vector<Tensor> a = {Tensor::from_vector<float>(ours, {1, 4})};
  const std::vector<std::pair<std::string, Tensor>> b = {{"logits", Tensor::from_vector<float>(reference, {1, 4})}};
  const auto diffs = converter::compare_outputs(one_output(), a, b, atol, rtol);
  REQUIRE(diffs.size() == 1);
  return diffs[0];
}

TEST_CASE("verify: near-zero elements are judged at 1% of the output's largest magnitude", "[convert]") {
  // Largest 3e13: the relative base never drops below 3e11, so with rtol 1e-3 an element near zero may be
  // off by up to 3e8 (Inception-v3's random-weight logits were off by 3e7 there).
  const std::vector<float> reference = {3e13f, -2e13f, 5.0f, 1e12f};
  const auto near_zero = [&](float off) {
    std::vector<float> ours = reference;
    ours[2] += off;
    return diff_of(ours, reference, 0.0, 1e-3);
  };
  CHECK(near_zero(2.9e8f).ok);
  CHECK_FALSE(near_zero(3.1e8f).ok);
  const auto d = near_zero(1e8f);
  CHECK(d.largest == static_cast<double>(3e13f));
  CHECK((d.max_abs > 0.99e8 && d.max_abs < 1.01e8));
  CHECK(d.argmax_agree == 1);
  // Elements above the floor keep their own relative tolerance: the largest off by 0.2% fails.
  std::vector<float> ours = reference;
  ours[0] *= 1.002f;
  CHECK_FALSE(diff_of(ours, reference, 0.0, 1e-3).ok);
}

TEST_CASE("verify: an all-zero reference leaves only atol, and NaN against a number fails", "[convert]") {
  CHECK(diff_of({0, 0, 5e-5f, 0}, {0, 0, 0, 0}, 1e-4, 1e-3).ok);
  CHECK_FALSE(diff_of({0, 0, 2e-4f, 0}, {0, 0, 0, 0}, 1e-4, 1e-3).ok);
  CHECK_FALSE(diff_of({0, 0, NAN, 0}, {0, 0, 1, 0}, 1e-4, 1e-3).ok);
  // An infinite reference element does not make the floor infinite.
  CHECK_FALSE(diff_of({INFINITY, 0, 1.0f, 0}, {INFINITY, 0, 2.0f, 0}, 1e-4, 1e-3).ok);
}

}  // namespace
}  // namespace pd
