// pd-bench --model: where the time of a training step (forward + loss + backward) or of an inference
// forward goes, per layer (or per op once the op API opens pd::bench::OpTimer), like `caffe time`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pd::bench {

struct ModelRow {
  std::string name;  // "conv1 (conv2d) fwd", or an op name
  int64_t calls = 0;
  double total_ms = 0;  // over all timed steps, timer overhead subtracted
};

struct ModelReport {
  std::string granularity;  // "layer" or "op"
  std::vector<ModelRow> rows;  // slowest first
  double sum_ms = 0;           // sum of the rows
  double total_ms = 0;         // the instrumented steps timed whole (what the rows must add up to)
  double plain_ms = 0;         // as many steps of the plain Network, no timers (instrumentation cost)
  double overhead_ns = 0;      // per timer, measured and subtracted
  int steps = 0;
  int64_t batch = 0;
  bool inference = false;
};

// Steps are timed until `budget_ms` has passed and at least `min_steps` ran, after `warmup` steps.
ModelReport bench_model(const std::string& path, int64_t batch, bool inference, double budget_ms, int min_steps,
                        int warmup);

}  // namespace pd::bench
