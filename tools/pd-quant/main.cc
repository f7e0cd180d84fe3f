// pd-quant MODEL.pdmodel OUT.pdmodel --calib SPEC: post-training quantization into the QDQ form
// (docs/pd-quant.md). Calibrates the activation inputs of conv2d / linear on SPEC's samples, inserts
// quantize/dequantize pairs, stores weights as s8 per channel, and with --eval reports f32 and
// quantized accuracy. Exit codes: 0 ok, 1 runtime failure, 2 usage or input error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "common/test_set.h"
#include "common/tool_main.h"
#include "op_api.h"
#include "pd/core/cpu_features.h"
#include "pd/core/threads.h"
#include "pd/ir/pass.h"
#include "pd/exec/executor.h"
#include "pd/exec/plan.h"
#include "pd/io/model_file.h"
#include "pd/quant/qdq.h"

namespace {

struct Options {
  std::string model, out, calib, eval, method = "percentile", activations = "u8";
  int64_t samples = 512, batch = 64, eval_limit = 0;
  double percentile = 99.99;
  bool per_tensor = false, report = false, reduce_range = false;
  std::vector<std::string> exclude;
  int threads = 0;
};

// The batches of a labelled set, as program inputs (and their labels, for accuracy).
std::vector<pd::data::Batch> batches_of(const pd::tools::TestSet& t, int64_t batch) {
  pd::data::DataLoader loader(t.data, {.batch_size = batch, .shuffle = false}, t.transforms);
  loader.start_epoch(0);
  std::vector<pd::data::Batch> out;
  while (auto b = loader.next()) out.push_back(*b);
  return out;
}

// Top-1 accuracy of a program (compiled for this machine) on labelled batches.
double accuracy(const pd::ir::Program& p, const std::string& input, const std::vector<pd::data::Batch>& batches) {
  pd::exec::ExecPlan plan = pd::exec::compile(p, pd::Target::host());
  pd::exec::Executor exec(plan);
  int64_t correct = 0, total = 0;
  for (const auto& b : batches) {
    const pd::Tensor logits = exec.run({{input, b.x}})[0];
    correct += pd::ops::sum(pd::ops::cast(pd::ops::equal(pd::ops::argmax(logits, -1), b.y), pd::DType::i64)).item<int64_t>();
    total += b.y.numel();
  }
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

int64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

int run(const Options& o) {
  using pd::tools::InputError;
  pd::quant::QdqOptions q;
  try {
    q.method = pd::quant::parse_method(o.method);
  } catch (const pd::Error& e) {
    throw InputError(fmt::format("--method: {}", e.what()));
  }
  if (o.activations != "u8" && o.activations != "s8")
    throw InputError(fmt::format("--activations must be u8 or s8, but received '{}'", o.activations));
  q.activations = o.activations == "u8" ? pd::DType::u8 : pd::DType::i8;
  q.percentile = o.percentile;
  q.per_channel = !o.per_tensor;
  q.reduce_range = o.reduce_range;
  q.exclude = o.exclude;
  if (o.threads > 0) pd::set_num_threads(o.threads);

  pd::ir::Program program;
  try {
    program = pd::io::load_program(o.model);
  } catch (const pd::Error& e) {
    throw InputError(e.what());
  }
  // The portable passes first (batch norms folded into the convs, dead ops gone), as pd-opt -O2 would:
  // a batch norm after a quantized conv would otherwise stay an f32 op between int8 ones.
  pd::ir::PassManager({.level = 2}).run(program);
  const pd::tools::TestSet calib = pd::tools::load_test_set(program, o.calib, o.samples, "--calib");
  const std::vector<pd::data::Batch> calib_batches = batches_of(calib, o.batch);
  if (calib_batches.empty()) throw InputError(fmt::format("--calib {}: the data set is empty", o.calib));
  if (pd::quant::quantizable_inputs(program, o.exclude).empty())
    throw InputError(fmt::format("{}: the model has no conv2d or linear with an f32 weight param to quantize{}", o.model,
                                 o.exclude.empty() ? "" : " (after --exclude)"));

  // Calibration: every batch through the f32 model, observing each quantized input.
  std::vector<std::map<std::string, pd::Tensor>> feeds;
  for (const auto& b : calib_batches) feeds.push_back({{calib.input, b.x}});
  const bool tty = isatty(fileno(stderr));
  if (tty) fmt::print(stderr, "pd-quant: calibrating on {} samples ({} batches)...\n", calib.data.features.shape()[0], feeds.size());
  const auto observers = pd::quant::calibrate(program, feeds, o.exclude);
  for (const auto& [name, obs] : observers)
    if (obs.non_finite() > 0)
      fmt::print(stderr, "pd-quant: warning: '{}' saw {} NaN or Inf values in calibration; they were left out of its range\n",
                 name, obs.non_finite());

  pd::ir::Program quantized = program;
  const int64_t ops_quantized = pd::quant::insert_qdq(quantized, observers, q);
  std::map<std::string, std::string> metadata;
  metadata["quantized_by"] = fmt::format("pd-quant --method {} --activations {} --{}{} ({} samples)", o.method, o.activations,
                                         o.per_tensor ? "per-tensor" : "per-channel", o.reduce_range ? " --reduce-range" : "",
                                         calib.data.features.shape()[0]);
  pd::io::save_program(o.out, quantized, metadata);

  fmt::print("quantized  {} conv2d / linear ops: activations {} ({}), weights s8{} per {}\n", ops_quantized, o.activations,
             o.method, o.reduce_range ? " at 7 bits" : "", o.per_tensor ? "tensor" : "output channel");
  fmt::print("params     {:.1f} KiB -> {:.1f} KiB\n", file_bytes(pd::io::params_path_for(o.model)) / 1024.0,
             file_bytes(pd::io::params_path_for(o.out)) / 1024.0);
  if (o.report) {
    fmt::print("{:<24} {:>12} {:>12} {:>12} {:>10}\n", "activation", "min", "max", "scale", "zero point");
    for (const auto& [name, obs] : observers) {
      const pd::quant::QParams p = pd::quant::qparams_for(obs.range(q.method, q.percentile), q.activations);
      fmt::print("{:<24} {:>12.5g} {:>12.5g} {:>12.5g} {:>10}\n", name, obs.min(), obs.max(), p.scale, p.zero_point);
    }
  }
  if (!o.eval.empty()) {
    const pd::tools::TestSet eval = pd::tools::load_test_set(program, o.eval, o.eval_limit, "--eval");
    const std::vector<pd::data::Batch> eval_batches = batches_of(eval, o.batch);
    const double f32 = accuracy(program, eval.input, eval_batches), int8 = accuracy(quantized, eval.input, eval_batches);
    fmt::print("accuracy   f32 {:.4f}, quantized {:.4f} ({:+.4f}) on {} samples\n", f32, int8, int8 - f32,
               eval.data.features.shape()[0]);
  }
  fmt::print("int8 path  {}\n", pd::int8_path_name());
  fmt::print("wrote      {} (QDQ form; pd-infer and pd-opt lower it to int8 kernels)\n", o.out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pd-quant: post-training quantization into the QDQ form (docs/pd-quant.md)", "pd-quant"};
  Options o;
  app.add_option("model", o.model, "MODEL.pdmodel to quantize (batch norms are folded first, as pd-opt -O2 does)")->required();
  app.add_option("output", o.out, "where to write the quantized model (.pdmodel; its .pdiparams goes next to it)")->required();
  app.add_option("--calib", o.calib, "a YAML with a model-YAML style data.test source: the calibration samples")->required();
  app.add_option("--samples", o.samples, "calibration samples to use (default 512)")->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "batch size for calibration and --eval (default 64)")->check(CLI::PositiveNumber);
  app.add_option("--method", o.method, "activation ranges: minmax, percentile (default), kl, mse");
  app.add_option("--percentile", o.percentile, "with --method percentile (default 99.99)");
  app.add_option("--activations", o.activations, "u8 (asymmetric, default) or s8 (symmetric)");
  app.add_flag("--per-tensor", o.per_tensor, "one weight scale per tensor instead of per output channel");
  app.add_flag("--reduce-range", o.reduce_range,
               "weights at 7 bits: exact on CPUs without VNNI, which otherwise halve 8-bit weights at run time");
  app.add_option("--exclude", o.exclude, "leave these in f32: op types, output value or weight param names")
      ->delimiter(',');
  app.add_option("--eval", o.eval, "a YAML with a data.test source: report f32 and quantized accuracy");
  app.add_option("--eval-limit", o.eval_limit, "with --eval: use only the first N samples")->check(CLI::PositiveNumber);
  app.add_flag("--report", o.report, "print each activation's observed range, scale and zero point");
  app.add_option("--threads", o.threads, "CPU threads for the kernels")->check(CLI::PositiveNumber);
  return pd::tools::run_tool("pd-quant", app, argc, argv, [&] {
    try {
      return run(o);
    } catch (const pd::tools::InputError& e) {
      fmt::print(stderr, "pd-quant: error: {}\n", e.what());
      return 2;
    }
  });
}
