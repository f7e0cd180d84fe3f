// pd-infer's measurements and checks: latency percentiles, comparison against a reference output,
// and the text or JSON report.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "pd/core/tensor.h"

namespace pd::infer {

struct Latency {
  double min = 0, p50 = 0, p90 = 0, p99 = 0, mean = 0;  // ms
};
Latency summarize(std::vector<double> ms);

// Elementwise |got - want| <= atol + rtol * |want| (tolerances finite and >= 0, else pd::Error). Two
// elements are reported: the one with the largest absolute error, and the one furthest beyond its
// tolerance (they differ when the tolerance grows with |want|).
struct Comparison {
  bool ok = true;
  bool shape_differs = false;
  double max_abs_err = 0, max_rel_err = 0;
  std::vector<int64_t> index;  // of the largest absolute error (NaN counts as largest)
  double got = 0, want = 0;
  std::vector<int64_t> worst_index;  // of the largest excess over the tolerance
  double worst_got = 0, worst_want = 0;
  int64_t mismatches = 0;
};
Comparison compare(const Tensor& got, const Tensor& want, double rtol, double atol);

// One op type's share of the profiled runs (pd-infer --profile).
struct OpProfile {
  std::string op;
  int64_t calls = 0;
  double total_ms = 0;  // exclusive, timer overhead subtracted
};

// One op of the program: its median wall time over the profiled runs (pd-infer --profile).
struct NodeProfile {
  int64_t index = 0;       // in program order
  std::string op, result;  // the op type and its first result's name and type, e.g. "%68: f32[1, 32, 28, 28]"
  double p50_us = 0;
};

struct Report {
  std::string model, source;  // source: random, npy, data
  int64_t batch = 0, samples = 0, runs = 0, warmup = 0;
  int threads = 0;
  Latency latency;
  double throughput = 0;  // samples/s over the timed runs
  double peak_rss_mib = 0;
  int64_t exec_peak_bytes = 0, exec_total_bytes = 0, ops = 0;
  std::string target;        // what the model was compiled for ("cpu-avx512")
  std::string lowering;      // "lowered at load", "lowered by pd-opt", "not lowered (--no-lower)"
  int64_t source_ops = 0;    // ops in the model file (ops: after lowering)
  std::optional<double> accuracy;
  std::optional<Comparison> comparison;
  std::string compare_file;
  std::vector<OpProfile> profile;  // slowest first; empty without --profile
  std::vector<NodeProfile> nodes;  // slowest first; empty without --profile
  double profile_runs = 0;
  double openmp_team_uses = 0;     // a profiled run: primitives that ran on OpenMP's team
};
std::string text_report(const Report& r);
std::string json_report(const Report& r);
double peak_rss_mib();

}  // namespace pd::infer
