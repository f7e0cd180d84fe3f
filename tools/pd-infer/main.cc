// pd-infer MODEL.pdmodel: run a model file on .npy inputs, a labelled test set or random data; time it,
// write and compare its outputs. Exit codes: 0 ok, 1 runtime failure or --compare mismatch, 2 usage or
// input error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>

#include "common/cli_checks.h"
#include "common/inputs.h"
#include "common/openmp_spin.h"
#include "common/tool_main.h"
#include "device_program.h"
#include "op_api.h"
#include "pd/core/allocator.h"
#include "pd/core/thread_pool.h"
#include "pd/core/threads.h"
#include "pd/data/readers.h"
#include "pd/exec/executor.h"
#include "pd/exec/plan.h"
#include "pd/io/model_file.h"
#include "pd/ops/op_profiler.h"
#include "report.h"

namespace fs = std::filesystem;
using pd::Tensor;

namespace {

struct Options {
  std::string model, data, output_dir, compare, device = "cpu";
  std::vector<std::string> inputs;
  int64_t batch = 0, warmup = 10, repeat = 100, limit = 0;
  uint64_t seed = 0;
  int threads = 0, opt_level = 2;
  double rtol = 1e-5, atol = 1e-6;
  bool json = false, profile = false, no_lower = false;
};

// The file --output-dir writes each output to: NAME.npy, with any character but letters, digits, '.',
// '_' and '-' made '_' (Paddle's fetch names hold '/': save_infer_model/scale_0.tmp_0 is not a path
// to write under). Two outputs that would share a file are an error, before anything is written.
std::vector<std::string> output_files(const std::vector<std::string>& names) {
  std::vector<std::string> files;
  std::map<std::string, std::string> taken;
  for (const std::string& name : names) {
    std::string file = name;
    for (char& c : file)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    file += ".npy";
    if (auto [it, fresh] = taken.emplace(file, name); !fresh)
      throw pd::tools::InputError(
          fmt::format("--output-dir: outputs '{}' and '{}' would both be written to {}", it->second, name, file));
    files.push_back(file);
  }
  return files;
}

// The report's word for what loading did to a portable model.
std::string load_lowering(int level) {
  return level == 0 ? "lowered at load (-O0)" : fmt::format("optimised (-O{}) and lowered at load", level);
}

// A run directory or model.pdparams of pd-train stand for the model.pdmodel next to them.
std::string resolve_model(const std::string& arg) {
  fs::path p(arg);
  if (fs::is_directory(p)) p /= "model.pdmodel";
  else if (p.extension() == ".pdparams") p.replace_extension(".pdmodel");
  if (!fs::exists(p)) throw pd::tools::InputError(fmt::format("{}: no such model file", p.string()));
  return p.string();
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Runtime failures (exit 1) are told apart from bad input (exit 2) by where they happen.
struct RuntimeFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Each op's median wall time in program order, slowest first: which of several convolutions costs what.
std::vector<pd::infer::NodeProfile> node_profile(const pd::ir::Program& program, const std::vector<std::vector<int64_t>>& runs) {
  std::vector<pd::infer::NodeProfile> nodes;
  const auto& ops = program.ops();
  for (size_t k = 0; k < ops.size() && !runs.empty(); ++k) {
    std::vector<int64_t> ns;
    for (const auto& run : runs) ns.push_back(run[k]);
    std::nth_element(ns.begin(), ns.begin() + ns.size() / 2, ns.end());
    std::string result;
    if (!ops[k].results.empty()) {
      const pd::ir::Value& v = program.values()[static_cast<size_t>(ops[k].results[0])];
      result = fmt::format("%{}: {}", v.name, v.type.str());
    }
    nodes.push_back({static_cast<int64_t>(k), ops[k].type, result, static_cast<double>(ns[ns.size() / 2]) / 1e3});
  }
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.p50_us > b.p50_us; });
  return nodes;
}

// Per-op times over `runs` extra runs, apart from the timed ones so that the timers do not skew the
// latency figures: exclusive time summed by op type, and each op's own median.
void profile_runs(pd::exec::Executor& exec, const pd::ir::Program& program, const std::map<std::string, Tensor>& in, int64_t runs,
                  pd::infer::Report& r) {
  pd::profiler::profile_reset();
  pd::profiler::set_profiling(true);
  exec.set_time_ops(true);
  std::vector<std::vector<int64_t>> op_ns;
  const int64_t team_uses = pd::openmp_team_uses();
  for (int64_t i = 0; i < runs; ++i) {
    exec.run(in);
    op_ns.push_back(exec.stats().op_ns);
  }
  exec.set_time_ops(false);
  pd::profiler::set_profiling(false);
  const double overhead_ns = pd::profiler::timer_overhead_ns();
  for (const pd::profiler::OpStat& s : pd::profiler::profile_snapshot())
    r.profile.push_back({s.name, s.calls, std::max(0.0, (static_cast<double>(s.ns) - s.calls * overhead_ns) / 1e6)});
  std::sort(r.profile.begin(), r.profile.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  r.profile_runs = static_cast<double>(runs);
  r.openmp_team_uses = static_cast<double>(pd::openmp_team_uses() - team_uses) / static_cast<double>(runs);
  r.nodes = node_profile(program, op_ns);
}

// On a GPU the time includes copying the inputs there and the outputs back (which waits for the run).
std::vector<Tensor> timed_run(pd::exec::Executor& exec, const std::map<std::string, Tensor>& in, std::vector<double>* ms,
                              pd::Place place) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const pd::DefaultPlaceGuard on_device(place);  // the program's creation ops (arange, zeros) make their tensors there
    auto out = exec.run(place.is_cpu() ? in : pd::infer::to_place(in, place));
    if (!place.is_cpu())
      for (Tensor& t : out) t = t.to(pd::Place::cpu());
    if (ms) ms->push_back(ms_since(t0));
    return out;
  } catch (const pd::Error& e) {
    throw RuntimeFailure(e.what());
  }
}

int run(const Options& o) {
  pd::infer::Report r;
  r.model = resolve_model(o.model);
  pd::Place place = pd::Place::cpu();
  try {
    place = pd::parse_place(o.device);
  } catch (const pd::Error& e) {
    throw pd::tools::InputError(fmt::format("--device: {}", e.what()));
  }
  const bool gpu = !place.is_cpu();
  if (gpu && o.profile)
    throw pd::tools::InputError("--profile times each op on the host clock; it is for the CPU, not --device " + o.device);
  // A portable model is optimised (-O) and lowered for this machine here, as onnxruntime optimises when a
  // session starts (not for a GPU: the lowering makes CPU kernels).
  pd::exec::ExecPlan plan;
  std::unique_ptr<pd::ir::Program> device_program;
  try {
    // The batch it will run at, for lowering choices that depend on it (Winograd on large weights).
    const int64_t batch_hint = o.batch > 0 ? o.batch : (o.data.empty() ? 1 : 64);
    plan = pd::exec::compile(pd::io::load_program(r.model), pd::Target::host(),
                             {.lower = !o.no_lower && !gpu, .level = o.opt_level, .batch_hint = batch_hint});
    if (gpu) device_program = std::make_unique<pd::ir::Program>(pd::infer::program_on(plan.program(), place));
  } catch (const pd::Error& e) {
    throw pd::tools::InputError(e.what());
  }
  const pd::ir::Program& program = plan.program();
  r.target = gpu ? place.str() : plan.target().str();
  r.source_ops = plan.source_ops();
  r.lowering = gpu && !program.target().empty() ? "lowered by pd-opt for " + program.target() + "; its ops run on the GPU"
               : gpu ? "not lowered (GPU)"
               : !program.target().empty() && plan.lowering_report().empty() ? "lowered by pd-opt for " + program.target()
               : o.no_lower                                                  ? "not lowered (--no-lower)"
                                                                             : load_lowering(o.opt_level);
  if (o.threads > 0) pd::set_num_threads(o.threads);
  r.threads = o.threads;
  r.warmup = o.warmup;
  const auto executor = gpu ? std::make_unique<pd::exec::Executor>(*device_program) : std::make_unique<pd::exec::Executor>(plan);
  pd::exec::Executor& exec = *executor;
  std::vector<double> ms;
  std::vector<Tensor> outputs;

  if (!o.data.empty()) {
    if (!o.inputs.empty()) throw pd::tools::InputError("--data and --input cannot be combined");
    r.source = "data";
    r.batch = o.batch > 0 ? o.batch : 64;
    pd::tools::TestSet t = pd::tools::load_test_set(program, o.data, o.limit);
    pd::data::DataLoader loader(t.data, {.batch_size = r.batch, .shuffle = false}, t.transforms);
    loader.start_epoch(0);
    auto first = loader.next();
    if (!first) throw pd::tools::InputError(fmt::format("--data {}: the test set is empty", o.data));
    try {
      pd::exec::check_inputs(program, {{t.input, first->x}});
    } catch (const pd::Error& e) {
      throw pd::tools::InputError(e.what());
    }
    for (int64_t i = 0; i < o.warmup; ++i) timed_run(exec, {{t.input, first->x}}, nullptr, place);
    if (o.profile) profile_runs(exec, program, {{t.input, first->x}}, o.repeat, r);
    std::vector<std::vector<Tensor>> per_output(program.outputs().size());
    int64_t correct = 0;
    for (auto b = first; b; b = loader.next()) {
      auto out = timed_run(exec, {{t.input, b->x}}, &ms, place);
      for (size_t k = 0; k < out.size(); ++k) per_output[k].push_back(out[k]);
      if (out[0].dim() == 2) correct += pd::ops::sum(pd::ops::cast(pd::ops::equal(pd::ops::argmax(out[0], -1), b->y), pd::DType::i64)).item<int64_t>();
      r.samples += b->y.numel();
    }
    for (auto& parts : per_output) outputs.push_back(pd::ops::concat(parts, 0));
    if (outputs[0].dim() == 2) r.accuracy = static_cast<double>(correct) / static_cast<double>(r.samples);
  } else {
    std::map<std::string, Tensor> in;
    if (!o.inputs.empty()) {
      r.source = "npy";
      in = pd::tools::read_inputs(program, o.inputs);
    } else {
      r.source = "random";
      in = pd::tools::random_inputs(program, o.batch > 0 ? o.batch : 1, o.seed);
    }
    try {
      pd::exec::check_inputs(program, in);
    } catch (const pd::Error& e) {
      throw pd::tools::InputError(e.what());
    }
    const Tensor& lead = in.begin()->second;
    r.batch = lead.dim() > 0 ? lead.shape()[0] : 1;
    for (int64_t i = 0; i < o.warmup; ++i) timed_run(exec, in, nullptr, place);
    for (int64_t i = 0; i < o.repeat; ++i) outputs = timed_run(exec, in, &ms, place);
    r.samples = r.batch * o.repeat;
    if (o.profile) profile_runs(exec, program, in, o.repeat, r);
  }
  r.runs = static_cast<int64_t>(ms.size());
  r.latency = pd::infer::summarize(ms);
  double total_ms = 0;
  for (double v : ms) total_ms += v;
  r.throughput = total_ms > 0 ? static_cast<double>(r.samples) / (total_ms / 1000.0) : 0;
  r.exec_peak_bytes = exec.stats().peak_bytes;
  r.exec_total_bytes = exec.stats().total_intermediate_bytes;
  r.ops = exec.stats().ops_run;
  r.peak_rss_mib = pd::infer::peak_rss_mib();

  if (!o.output_dir.empty() && !outputs.empty()) {
    const std::vector<std::string> files = output_files(program.output_names());
    fs::create_directories(o.output_dir);
    for (size_t k = 0; k < outputs.size(); ++k) pd::data::write_npy((fs::path(o.output_dir) / files[k]).string(), outputs[k]);
  }
  if (!o.compare.empty() && !outputs.empty()) {
    // REF.npy compares the first output; NAME=REF.npy a named one.
    size_t k = 0;
    r.compare_file = o.compare;
    if (const size_t eq = o.compare.find('='); eq != std::string::npos) {
      const auto& names = program.output_names();
      auto it = std::find(names.begin(), names.end(), o.compare.substr(0, eq));
      if (it == names.end())
        throw pd::tools::InputError(fmt::format("--compare: the model has no output '{}' (outputs: {})", o.compare.substr(0, eq),
                                                fmt::join(names, ", ")));
      k = static_cast<size_t>(it - names.begin());
      r.compare_file = o.compare.substr(eq + 1);
    }
    Tensor ref;
    try {
      ref = pd::data::read_npy(r.compare_file);
    } catch (const pd::Error& e) {
      throw pd::tools::InputError(fmt::format("--compare: {}", e.what()));
    }
    r.comparison = pd::infer::compare(outputs[k], ref, o.rtol, o.atol);
    if (r.comparison->shape_differs)
      fmt::print(stderr, "pd-infer: output '{}' has shape {}, {} has {}\n", program.output_names()[k],
                 pd::shape_str(outputs[k].shape()), r.compare_file, pd::shape_str(ref.shape()));
  }
  fmt::print("{}", o.json ? pd::infer::json_report(r) + "\n" : pd::infer::text_report(r));
  return r.comparison && !r.comparison->ok ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  pd::tools::bound_openmp_spin(argv);
  CLI::App app{"pd-infer: run a model file (docs/pd-infer.md)", "pd-infer"};
  Options o;
  app.add_option("model", o.model, "MODEL.pdmodel (or a pd-train run directory)")->required();
  app.add_option("--input,-i", o.inputs, "NAME=FILE.npy, one per model input (repeatable)");
  app.add_option("--data", o.data, "a YAML with a model-YAML style data.test source: report accuracy");
  app.add_option("--limit", o.limit, "with --data: use only the first N samples")->check(pd::tools::positive<int64_t>());
  app.add_option("--batch,-b", o.batch, "batch size for -1 dims (random data: 1, --data: 64)")->check(pd::tools::positive<int64_t>());
  app.add_option("--seed", o.seed, "seed of the random inputs")->check(pd::tools::non_negative<uint64_t>());
  app.add_option("--threads", o.threads, "CPU threads for the kernels")->check(pd::tools::positive<int>());
  app.add_option("--device", o.device, "cpu (default), cuda or cuda:N: run the model there (not lowered)");
  app.add_option("--warmup", o.warmup, "untimed runs first")->check(pd::tools::non_negative<int64_t>());
  app.add_option("--repeat", o.repeat, "timed runs (random or .npy inputs)")->check(pd::tools::positive<int64_t>());
  app.add_option("--output-dir,-o", o.output_dir, "write every output as DIR/NAME.npy");
  app.add_option("--compare", o.compare, "[NAME=]REF.npy: exit 1 unless the output matches");
  app.add_option("--rtol", o.rtol, "relative tolerance of --compare")->check(pd::tools::non_negative_number());
  app.add_option("--atol", o.atol, "absolute tolerance of --compare")->check(pd::tools::non_negative_number());
  app.add_flag("--json", o.json, "print one JSON object instead of the text report");
  app.add_flag("--profile", o.profile, "time every op over --repeat extra runs and print a per-op table");
  app.add_option("-O", o.opt_level, "pd-opt's level a portable model is optimised at when loaded, before lowering (default 2)")
      ->check(pd::tools::integer_in<int>(0, 3, "an optimisation level from 0 to 3"));
  app.add_flag("--no-lower", o.no_lower, "run the model's ops as they are, without optimising or lowering them for this machine");
  if (auto rc = pd::tools::parse_command_line("pd-infer", app, argc, argv)) return *rc;
  try {
    return run(o);
  } catch (const pd::tools::InputError& e) {
    fmt::print(stderr, "pd-infer: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pd-infer: error: {}\n", e.what());
    return 1;
  }
}
