// pd-bench's forward timing runs an op as an inference model would: its weights (the inputs after the
// first) declared constant, so that kernels which pack a weight pack it once, not on every timed call
// (blocked_conv2d's rows were 2-3x the in-model time before); the data input is never declared.
#include <catch2/catch.hpp>

#include "pd/bench/problem.h"
#include "pd/bench/runner.h"
#include "pd/core/packed_weights.h"
#include "pd/ops/op_observer.h"
#include "pd/pd.h"

namespace {

struct ConstantsSeen : pd::OpObserver {
  int calls = 0, weight_constant = 0, data_constant = 0;
  bool wants_values() const override { return true; }
  void record(const char* op, const pd::BoxedInputs& in, const pd::AttrMap&, const std::vector<pd::Tensor>&) override {
    if (std::string(op) != "linear") return;
    ++calls;
    const pd::PackedWeights* cache = pd::current_packed_weights();
    if (cache && cache->is_constant(in[1][0])) ++weight_constant;
    if (cache && cache->is_constant(in[0][0])) ++data_constant;
  }
};

}  // namespace

TEST_CASE("pd-bench times an op's forward with its weights declared constant", "[bench]") {
  const pd::OpSchema& op = pd::op_schema("linear");
  const pd::BenchProblem p = pd::bench::problem_from_flags(op, {"x=8x16", "weight=4x16", "bias=4"}, {});
  pd::bench::RunOptions o;
  o.budget_ms = 1, o.min_reps = 2, o.warmup = 1, o.threads = 1, o.bwd = false;
  ConstantsSeen seen;
  {
    pd::ScopedOpObserver install(&seen);
    pd::bench::bench_op(op, p, "x=8x16", o, pd::bench::Peak{});
  }
  REQUIRE(seen.calls >= 3);
  CHECK(seen.weight_constant == seen.calls);
  CHECK(seen.data_constant == 0);
  CHECK(pd::current_packed_weights() == nullptr);  // the scope closed with the timing
}
