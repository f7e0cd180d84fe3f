// pd-bench [OP] [--shape PROBLEM | --input ... --attr ...]: time or check kernels, or break down a
// model's training step (--model). docs/pd-bench.md has the problem grammar and the output formats.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/cli_checks.h"
#include "common/openmp_spin.h"
#include "common/tool_main.h"
#include "jobs.h"
#include "pd/bench/model_bench.h"
#include "pd/bench/problem.h"
#include "pd/bench/report.h"
#include "pd/core/allocator.h"
#include "pd/core/backend.h"
#include "pd/core/threads.h"
#include "registry.h"

namespace {

struct Options {
  pd::tools::ProblemArgs problem;
  std::string batch, mode = "perf", direction = "both", dtype = "f32", backend = "cpu", format = "table";
  std::string baseline, model;
  double threshold = 10;
  int64_t batch_size = 64;
  bool reprobe = false, inference = false, list = false;
  pd::bench::RunOptions run;
};

int run_model(const Options& o) {
  auto rep = pd::bench::bench_model(o.model, o.batch_size, o.inference, o.run.budget_ms, o.run.min_reps, o.run.warmup);
  fmt::print("# {} {}, batch {}, {} steps, per-{} times ({} ns timer overhead subtracted per call)\n", o.model,
             rep.inference ? "inference" : "training step (forward + loss + backward)", rep.batch, rep.steps,
             rep.granularity, rep.overhead_ns);
  if (rep.granularity == "layer")
    fmt::print("# per-layer: the op API has no per-op timer hook yet (docs/pd-bench.md, 'Model mode')\n");
  fmt::print("{:<40} {:>8} {:>12} {:>12} {:>8}\n", "name", "calls", "total ms", "mean us", "share");
  for (const auto& r : rep.rows)
    fmt::print("{:<40} {:>8} {:>12.3f} {:>12.2f} {:>7.1f}%\n", r.name, r.calls, r.total_ms,
               1e3 * r.total_ms / std::max<int64_t>(1, r.calls), 100 * r.total_ms / std::max(1e-12, rep.sum_ms));
  double diff = 100 * (rep.sum_ms - rep.total_ms) / std::max(1e-12, rep.total_ms);
  fmt::print("sum of rows {:.3f} ms, same steps timed whole {:.3f} ms ({:+.1f}%); plain Network steps {:.3f} ms "
             "({:.3f} ms per step)\n", rep.sum_ms, rep.total_ms, diff, rep.plain_ms, rep.plain_ms / rep.steps);
  return 0;
}

int run_check(const Options& o, const std::vector<pd::tools::Job>& jobs) {
  int passed = 0, failed = 0;
  for (const auto& j : jobs) {
    auto results = pd::bench::check_op(*j.op, j.problem, o.run);
    for (const auto& c : results) {
      std::string where = fmt::format("{} {} {} {} {}", j.op->name, j.label, c.backend, o.dtype, c.direction);
      if (c.passed) {
        fmt::print("PASSED {}\n", where);
        ++passed;
      } else {
        fmt::print("FAILED {}: max abs err {:.3g}: {}\n  reproduce: pd-bench {} --mode check --dtype {} --direction {} {}\n",
                   where, c.max_abs_err, c.detail, j.op->name, o.dtype, c.direction, pd::bench::problem_flags(*j.op, j.problem));
        ++failed;
      }
    }
  }
  fmt::print("{} passed, {} failed\n", passed, failed);
  // A build without oneDNN (PD_WITH_ONEDNN=OFF) has nothing to hold against the reference kernels.
  if (passed + failed == 0) {
    std::string backends;
    for (pd::Backend b : pd::built_cpu_backends()) backends += std::string(backends.empty() ? "" : ", ") + pd::backend_name(b);
    fmt::print("nothing checked: these ops have no kernel besides the reference one in this build (backends: {})\n", backends);
  }
  return failed ? 1 : 0;
}

int run_perf(const Options& o, const std::vector<pd::tools::Job>& jobs) {
  auto machine = pd::bench::machine_info();
  // --backend cuda: shares of the GPU's peaks (measured now), not of the CPU's.
  auto peak = o.run.backend == "cuda" ? pd::bench::device_peak(pd::Place::cuda(0), o.run.dtype)
                                      : pd::bench::machine_peak(machine.threads, o.reprobe);
  bool table = o.format == "table";
  if (table) pd::bench::print_header(stdout, machine, peak);
  std::vector<pd::bench::Result> rows;
  int errors = 0;
  for (const auto& j : jobs) {
    try {
      if (!pd::registry::registered_kernels(j.op->name).empty()) pd::bench::resolve_backend(j.op->name, o.run.dtype, o.run.backend);
    } catch (const pd::Error& e) {
      if (j.from_yaml) continue;  // a full run covers the ops that have a kernel for this dtype and backend
      throw;
    }
    try {
      for (const auto& r : pd::bench::bench_op(*j.op, j.problem, j.label, o.run, peak)) {
        if (table) pd::bench::print_row(stdout, r);
        rows.push_back(r);
      }
    } catch (const pd::Error& e) {
      if (!j.from_yaml) throw;
      fmt::print(stderr, "pd-bench: error: {} {}: {}\n", j.op->name, j.label, e.what());
      ++errors;
    }
  }
  if (table) pd::bench::print_peak_notes(stdout, peak, rows);
  if (o.format == "json") pd::bench::write_json(stdout, machine, peak, rows);
  if (o.format == "csv") pd::bench::write_csv(stdout, machine, rows);
  if (!o.baseline.empty()) {
    // Times from another machine (or thread count, oneDNN, compiler) say nothing about a regression.
    const std::string then = pd::bench::baseline_machine(o.baseline), now = pd::bench::machine_summary(machine);
    if (then != now)
      fmt::print(stderr, "pd-bench: warning: baseline {} was measured on {}; this run is on {}: differences may be the "
                         "machine's, not the code's\n", o.baseline, then.empty() ? "an unnamed machine" : then, now);
    int matched = 0;
    auto regs = pd::bench::compare_baseline(o.baseline, rows, o.threshold / 100, &matched);
    fmt::print(stderr, "pd-bench: baseline {}: {} of {} rows compared, {} slower by more than {}%\n", o.baseline, matched,
               rows.size(), regs.size(), o.threshold);
    for (const auto& r : regs)
      fmt::print(stderr, "  REGRESSION {}: {:.4f} ms -> {:.4f} ms ({:+.1f}%)\n", r.key, r.base_ms, r.now_ms,
                 100 * (r.now_ms / r.base_ms - 1));
    if (!regs.empty()) return 3;
  }
  return errors ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  pd::tools::bound_openmp_spin(argv);
  CLI::App app{"pd-bench: time and check the kernels of every op, or a model's training step (docs/pd-bench.md)", "pd-bench"};
  Options o;
  app.add_option("op", o.problem.op, "the op to run (default: every op over its ops.yaml problems)");
  app.add_option("--shape", o.problem.shape, "a benchdnn-like problem, e.g. mb64ic3ih32oc16kh3ph1, m512n512k512, s64x256");
  app.add_option("--input", o.problem.inputs, "NAME=DIMS of a tensor input, e.g. x=64x3x32x32 (repeat)");
  app.add_option("--attr", o.problem.attrs, "NAME=VALUE of an attribute, e.g. padding=1,1 (repeat)");
  app.add_option("--batch", o.batch, "a file of problems, one command line's worth per line, # comments");
  app.add_option("--dtype", o.dtype, "f32 or f64 (f16 and bf16 with --backend cuda)")
      ->check(CLI::IsMember({"f32", "f64", "f16", "bf16"}));
  app.add_option("--backend", o.backend, "cpu (fastest available), onednn, reference or cuda")
      ->check(CLI::IsMember({"cpu", "onednn", "reference", "cuda"}));
  app.add_option("--threads", o.run.threads, "CPU threads for the kernels")->check(pd::tools::positive<int>());
  app.add_option("--mode", o.mode, "perf (time) or check (compare every backend with the reference kernel)")
      ->check(CLI::IsMember({"perf", "check"}));
  app.add_option("--direction", o.direction, "fwd, bwd (input gradients) or both")->check(CLI::IsMember({"fwd", "bwd", "both"}));
  app.add_option("--budget-ms", o.run.budget_ms, "time budget per problem and direction (default 200)")->check(pd::tools::positive_number());
  app.add_option("--min-reps", o.run.min_reps, "at least this many timed repetitions (default 5)")->check(pd::tools::positive<int>());
  app.add_option("--warmup", o.run.warmup, "untimed runs first (default 2)")->check(pd::tools::non_negative<int>());
  app.add_flag("--cold-cache", o.run.cold_cache, "evict the caches before each timed repetition (inputs and weights come from memory)");
  app.add_flag("--reprobe", o.reprobe, "measure the machine's peaks again instead of reading the cache");
  app.add_option("--format", o.format, "table, json or csv")->check(CLI::IsMember({"table", "json", "csv"}));
  app.add_option("--baseline", o.baseline, "a JSON file of an earlier run: exit 3 when a row got slower than --threshold");
  app.add_option("--threshold", o.threshold, "regression threshold in percent (default 10)")->check(pd::tools::non_negative_number());
  app.add_option("--model", o.model, "a model file (pd-train's model.pdparams): per-layer time of a training step");
  app.add_option("--batch-size", o.batch_size, "model mode batch size (default 64)")->check(pd::tools::positive<int64_t>());
  app.add_flag("--inference", o.inference, "model mode: time the forward pass only, without gradients");
  app.add_flag("--list", o.list, "list the ops and their problem count, then exit");
  return pd::tools::run_tool("pd-bench", app, argc, argv, [&]() -> int {
    if (o.backend == "cuda") pd::parse_place("cuda");  // says what is missing: the CUDA build or a GPU
    if (o.list) {
      for (const auto& s : pd::all_op_schemas())
        fmt::print("{:<24} {} problem(s){}\n", s.name, s.bench.size(), s.differentiable ? ", fwd+bwd" : "");
      return 0;
    }
    o.run.dtype = pd::dtype_from_name(o.dtype);
    o.run.backend = o.backend;
    o.run.fwd = o.direction != "bwd";
    o.run.bwd = o.direction != "fwd";
    pd::set_num_threads(o.run.threads);
    if (!o.model.empty()) return run_model(o);
    auto jobs = o.batch.empty() ? pd::tools::jobs_for(o.problem) : pd::tools::jobs_from_batch_file(o.batch);
    PD_CHECK(o.batch.empty() || o.problem.op.empty(), pd::ErrorCode::kInvalidArgument, "give either an op or --batch, not both");
    // An op named on the command line with nothing to run in the asked direction would print an empty table.
    const bool full_run = o.problem.op.empty() && o.batch.empty();
    for (const auto& j : jobs)
      PD_CHECK(full_run || o.run.fwd || (j.op->differentiable && pd::is_floating(o.run.dtype)), pd::ErrorCode::kInvalidArgument,
               "{}: {}; --direction bwd has nothing to run (use --direction fwd)", j.op->name,
               j.op->differentiable ? fmt::format("no gradient for dtype {}", o.dtype) : std::string("the op has no gradient"));
    return o.mode == "check" ? run_check(o, jobs) : run_perf(o, jobs);
  });
}
