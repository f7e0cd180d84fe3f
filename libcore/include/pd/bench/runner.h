// Timing and checking one op on one problem: what pd-bench does per row.
//
//   pd::bench::RunOptions o;  o.budget_ms = 50;
//   auto rows = pd::bench::bench_op(pd::op_schema("matmul"), problem, "m1024n1024k1024", o, peak);
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "pd/bench/machine.h"
#include "pd/ops/dispatch.h"
#include "pd/ops/op_schema.h"

namespace pd::bench {

struct RunOptions {
  DType dtype = DType::f32;
  std::string backend = "cpu";  // cpu (fastest available), onednn, reference
  bool fwd = true, bwd = true;
  double budget_ms = 200;
  int min_reps = 5;
  int warmup = 2;
  int threads = 0;
  // Before each timed rep, write a buffer twice the last-level cache's size, so that the op reads its
  // inputs and weights from memory as it may in a model (benchdnn's --cold-cache).
  bool cold_cache = false;
};

struct Result {
  std::string op, problem, backend, dtype, direction;
  double min_ms = 0, median_ms = 0;
  int reps = 0;
  bool compute_bound = false;  // rate is GFLOP/s (else GB/s of bytes read + written)
  double rate = 0, pct_peak = 0;
  // A memory-bound problem whose bytes fit in the CPU cache: its rate is a cache rate, and no share of
  // the memory peak is reported (pct_peak 0).
  bool in_cache = false;
};

// Warm-up runs, then repetitions until `budget_ms` of wall time has passed and at least `min_reps`
// were timed. `setup` runs before each rep, outside the timed region (and the cache flush with
// cold_cache).
struct Timing {
  double min_ms = 0, median_ms = 0;
  int reps = 0;
};
Timing measure(const std::function<void()>& setup, const std::function<void()>& timed, const RunOptions& o);

// The backend that will run (op, dtype) under `choice`; throws kNotImplemented if it cannot.
Backend resolve_backend(const std::string& op, DType dtype, const std::string& choice);

// Rows for the requested directions (bwd only for differentiable ops with floating inputs).
std::vector<Result> bench_op(const OpSchema& op, const BenchProblem& p, const std::string& label, const RunOptions& o,
                             const Peak& peak);

struct CheckResult {
  bool passed = false;
  std::string backend, direction;
  double max_abs_err = 0;
  std::string detail;  // first mismatch
};
// Every non-reference backend registered for (op, dtype) against the reference kernel on the same
// inputs; |got - ref| <= tol * (1 + |ref|), tol = 1e-4 (f32) or 1e-10 (f64). Empty: nothing to compare.
std::vector<CheckResult> check_op(const OpSchema& op, const BenchProblem& p, const RunOptions& o);

}  // namespace pd::bench
