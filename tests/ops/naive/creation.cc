// Naive references for the creation ops (full, zeros, ones, arange) and property checks for the
// random ops (uniform, normal, dropout), whose RNG stream cannot be reproduced independently.
#include <catch2/catch.hpp>

#include "naive_util.h"

namespace {
using namespace pd::naive;

// Calls the op twice with the same attrs (the harness supplies a seed) and checks the results agree.
std::vector<pd::Tensor> call_twice(const char* op, const pd::BoxedInputs& in, const pd::AttrMap& attrs) {
  std::vector<pd::Tensor> a = pd::op_schema(op).call(in, attrs);
  std::vector<pd::Tensor> b = pd::op_schema(op).call(in, attrs);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].shape() == b[i].shape());
    CHECK(vals(a[i]) == vals(b[i]));
  }
  return a;
}

double mean_of(const Reals& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}
}  // namespace

PD_NAIVE_REF(full) {
  (void)in;
  Ints shape = get<Ints>(attrs, "shape", {});
  double value = get<double>(attrs, "value", 0.0);
  return {make(Reals(static_cast<size_t>(numel_of(shape)), value), shape)};
}

PD_NAIVE_REF(zeros) {
  (void)in;
  Ints shape = get<Ints>(attrs, "shape", {});
  return {make(Reals(static_cast<size_t>(numel_of(shape)), 0.0), shape)};
}

PD_NAIVE_REF(ones) {
  (void)in;
  Ints shape = get<Ints>(attrs, "shape", {});
  return {make(Reals(static_cast<size_t>(numel_of(shape)), 1.0), shape)};
}

PD_NAIVE_REF(arange) {
  (void)in;
  double start = get<double>(attrs, "start", 0.0), end = get<double>(attrs, "end", 0.0);
  double step = get<double>(attrs, "step", 1.0);
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
  Reals v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
  return {make(v, {n})};
}

PD_NAIVE_REF(uniform) {
  std::vector<pd::Tensor> outs = call_twice("uniform", in, attrs);
  Ints shape = get<Ints>(attrs, "shape", {});
  double lo = get<double>(attrs, "min", 0.0), hi = get<double>(attrs, "max", 1.0);
  CHECK(outs[0].shape() == shape);
  Reals v = vals(outs[0]);
  for (double x : v) {
    CHECK(x >= lo);
    CHECK(x < hi);
  }
  if (v.size() >= 1000) CHECK(std::abs(mean_of(v) - 0.5 * (lo + hi)) <= 0.1 * (hi - lo));
  return outs;
}

PD_NAIVE_REF(normal) {
  std::vector<pd::Tensor> outs = call_twice("normal", in, attrs);
  Ints shape = get<Ints>(attrs, "shape", {});
  double mu = get<double>(attrs, "mean", 0.0), sd = get<double>(attrs, "std", 1.0);
  CHECK(outs[0].shape() == shape);
  Reals v = vals(outs[0]);
  for (double x : v) CHECK(std::isfinite(x));
  if (v.size() >= 1000) {
    double m = mean_of(v), var = 0;
    for (double x : v) var += (x - m) * (x - m);
    double ssd = std::sqrt(var / static_cast<double>(v.size() - 1));
    CHECK(std::abs(m - mu) <= 0.15 * sd);
    CHECK(std::abs(ssd - sd) <= 0.15 * sd);
  }
  return outs;
}

PD_NAIVE_REF(dropout) {
  std::vector<pd::Tensor> outs = call_twice("dropout", in, attrs);
  REQUIRE(outs.size() >= 2);
  double p = get<double>(attrs, "p", 0.5);
  bool training = get<bool>(attrs, "training", true);
  Reals x = vals(in[0][0]), out = vals(outs[0]), mask = vals(outs[1]);
  CHECK(outs[0].shape() == in[0][0].shape());
  CHECK(outs[1].shape() == in[0][0].shape());
  REQUIRE(out.size() == x.size());
  REQUIRE(mask.size() == x.size());
  auto close = [](double a, double b) { return std::abs(a - b) <= 1e-6 * (1 + std::abs(b)); };
  if (training) {
    double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
    int64_t kept = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      bool ok = mask[i] == 0.0 || close(mask[i], scale);
      CHECK(ok);
      if (mask[i] != 0.0) ++kept;
      CHECK(close(out[i], x[i] * mask[i]));
    }
    if (x.size() >= 1000) CHECK(std::abs(static_cast<double>(kept) / static_cast<double>(x.size()) - (1 - p)) <= 0.05);
  } else {
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(out[i] == x[i]);
      CHECK(mask[i] == 1.0);
    }
  }
  return outs;
}
