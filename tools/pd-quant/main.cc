// pd-quant MODEL.pdmodel OUT.pdmodel --calib SPEC: post-training quantization into the QDQ form
// (docs/pd-quant.md). Calibrates the activation inputs of conv2d / linear on SPEC's samples (the
// statistics cached on disk), inserts quantize/dequantize pairs, stores weights as s8 per channel; with
// --eval reports f32 and quantized accuracy, and with --max-drop falls the most sensitive layers back to
// f32 until the accuracy budget holds. --weight-only quantizes only linear / matmul weights.
// Exit codes: 0 ok, 1 runtime failure or a budget that cannot be met, 2 usage or input error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/cli_checks.h"
#include "common/openmp_spin.h"
#include "common/output_path.h"
#include "common/progress.h"
#include "common/test_set.h"
#include "common/tool_main.h"
#include "op_api.h"
#include "pd-quant/budget.h"
#include "pd-quant/evaluate.h"
#include "pd/core/cpu_features.h"
#include "pd/core/threads.h"
#include "pd/exec/executor.h"
#include "pd/exec/plan.h"
#include "pd/io/model_file.h"
#include "pd/ir/pass.h"
#include "pd/quant/qdq.h"
#include "pd/quant/stats_cache.h"

namespace {

struct Options {
  std::string model, out, calib, eval, method = "percentile", activations = "u8", cache_dir;
  int64_t samples = 512, batch = 64, eval_limit = 0;
  double percentile = 99.99, max_drop = -1;
  bool per_tensor = false, report = false, reduce_range = false, weight_only = false, no_cache = false;
  int weight_bits = 8;  // --reduce-range: 7
  std::vector<std::string> exclude;
  int threads = 0;
};

// The layers that read each value, for --report: an activation's name is the IR's (a number for most),
// so the table also names the ops reading it by their weight's layer ("b1_conv1" of
// "b1_conv1.weight.bn_folded"), or by their type where they have no weight (a residual's add).
std::map<std::string, std::vector<std::string>> readers(const pd::ir::Program& program) {
  std::map<std::string, std::vector<std::string>> out;
  for (const pd::ir::Operation& op : program.ops()) {
    std::string layer = op.type;
    for (const auto& slot : op.inputs)
      for (const pd::ir::ValueId v : slot)
        if (program.value(v).kind == pd::ir::ValueKind::Param) {
          const std::string& name = program.value(v).name;
          layer = name.substr(0, name.find('.'));
          break;
        }
    for (const auto& slot : op.inputs)
      for (const pd::ir::ValueId v : slot) {
        std::vector<std::string>& names = out[program.value(v).name];
        if (std::find(names.begin(), names.end(), layer) == names.end()) names.push_back(layer);
      }
  }
  return out;
}

// The batches of a labelled set, as program inputs (and their labels, for accuracy).
std::vector<pd::data::Batch> batches_of(const pd::tools::TestSet& t, int64_t batch) {
  pd::data::DataLoader loader(t.data, {.batch_size = batch, .shuffle = false}, t.transforms);
  loader.start_epoch(0);
  std::vector<pd::data::Batch> out;
  while (auto b = loader.next()) out.push_back(*b);
  return out;
}

int64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// Where calibration statistics are kept: --cache-dir, else $XDG_CACHE_HOME/pd-quant, else
// ~/.cache/pd-quant; empty (no cache) with --no-cache or when none of those is set.
std::string cache_dir(const Options& o) {
  if (o.no_cache) return "";
  if (!o.cache_dir.empty()) return o.cache_dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/pd-quant";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/pd-quant";
  return "";
}

// The observers of every quantizable input: from the cache when this model and data were seen before,
// else by running the f32 model over the calibration batches (and then cached).
std::map<std::string, pd::quant::Observer> observe(const Options& o, const pd::ir::Program& program,
                                                   const std::vector<std::map<std::string, pd::Tensor>>& feeds, int64_t samples) {
  const std::string dir = cache_dir(o);
  std::string path, key;
  if (!dir.empty()) {
    key = pd::quant::stats_key({o.model, pd::io::params_path_for(o.model)}, feeds);
    path = dir + "/" + key + ".pdstats";
    std::string why;
    if (auto cached = pd::quant::load_stats(path, key, &why)) {
      fmt::print("calib      {} samples: statistics read from the cache {}\n", samples, path);
      return *std::move(cached);
    }
    if (std::filesystem::exists(path)) fmt::print(stderr, "pd-quant: warning: not using the statistics cache: {}\n", why);
  }
  pd::tools::Progress progress("pd-quant: calibrating", static_cast<int64_t>(feeds.size()));
  auto observers = pd::quant::calibrate(program, feeds, {}, [&] { progress.step(); });
  if (!path.empty()) {
    try {
      pd::quant::save_stats(path, observers, key);
    } catch (const pd::Error& e) {
      fmt::print(stderr, "pd-quant: warning: could not cache the calibration statistics: {}\n", e.what());
      path.clear();
    }
  }
  fmt::print("calib      {} samples ({} batches){}\n", samples, feeds.size(),
             path.empty() ? "" : fmt::format(", statistics cached in {}", path));
  return observers;
}

// The weights' bits as asked: --weight-bits, or 7 for --reduce-range.
int weight_bits(const Options& o) { return o.reduce_range ? 7 : o.weight_bits; }

// The summary's note on the weights' bits, empty at 8.
std::string bits_note(const Options& o) { return weight_bits(o) == 8 ? "" : fmt::format(" at {} bits", weight_bits(o)); }

std::string bits_flag(const Options& o) { return weight_bits(o) == 8 ? "" : fmt::format(" --weight-bits {}", weight_bits(o)); }

pd::quant::QdqOptions qdq_options(const Options& o) {
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
  q.weight_bits = weight_bits(o);
  q.exclude = o.exclude;
  return q;
}

void check_flags(const Options& o) {
  using pd::tools::InputError;
  if (!o.weight_only && o.calib.empty()) throw InputError("--calib is required (except with --weight-only)");
  if (o.max_drop >= 0 && o.eval.empty()) throw InputError("--max-drop needs --eval: the held-out data the budget is measured on");
  if (o.max_drop != -1 && !(o.max_drop >= 0 && o.max_drop < 1))
    throw InputError(fmt::format("--max-drop is an absolute accuracy drop in [0, 1), but received {}", o.max_drop));
}

int run(const Options& o) {
  using pd::tools::InputError;
  check_flags(o);
  pd::tools::check_model_output(o.model, o.out);
  const pd::quant::QdqOptions q = qdq_options(o);
  if (o.threads > 0) pd::set_num_threads(o.threads);

  pd::ir::Program program;
  try {
    program = pd::io::load_program(o.model);
  } catch (const pd::Error& e) {
    throw InputError(e.what());
  }
  // The portable passes first (batch norms folded into the convs, dead ops gone), as pd-opt -O2 would:
  // a batch norm after a quantized conv would otherwise stay an f32 op between int8 ones.
  pd::ir::PassOptions portable;
  portable.level = 2;
  pd::ir::PassManager(portable).run(program);
  if (const auto unmatched = pd::quant::unmatched_excludes(program, o.exclude, o.weight_only); !unmatched.empty())
    throw InputError(fmt::format("--exclude {}: names no {} op of {} (by type, output value, layer or weight name); its quantizable layers are {}",
                                 fmt::join(unmatched, ","), o.weight_only ? "linear or matmul" : "conv2d or linear", o.model,
                                 fmt::join(pd::quant::quantizable_layers(program, {}, o.weight_only), ", ")));
  const std::vector<std::string> layers = pd::quant::quantizable_layers(program, o.exclude, o.weight_only);
  if (layers.empty())
    throw InputError(fmt::format("{}: the model has no {} with an f32 weight param to quantize{}", o.model,
                                 o.weight_only ? "linear or matmul" : "conv2d or linear", o.exclude.empty() ? "" : " (after --exclude)"));

  // Quantizes the model with the layers named left in f32.
  pd::tools::Quantizer quantize;
  std::map<std::string, pd::quant::Observer> observers;
  int64_t calib_samples = 0;
  if (o.weight_only) {
    quantize = [&](const std::vector<std::string>& kept, const std::vector<std::string>& full_bits) {
      pd::quant::QdqOptions qk = q;
      qk.exclude.insert(qk.exclude.end(), kept.begin(), kept.end());
      qk.full_bits = full_bits;
      pd::ir::Program p = program;
      pd::quant::insert_weight_only(p, qk);
      return p;
    };
  } else {
    const pd::tools::TestSet calib = pd::tools::load_test_set(program, o.calib, o.samples, "--calib");
    std::vector<std::map<std::string, pd::Tensor>> feeds;
    for (const auto& b : batches_of(calib, o.batch)) feeds.push_back({{calib.input, b.x}});
    if (feeds.empty()) throw InputError(fmt::format("--calib {}: the data set is empty", o.calib));
    calib_samples = calib.data.features.shape()[0];
    observers = observe(o, program, feeds, calib_samples);
    for (const auto& [name, obs] : observers)
      if (obs.non_finite() > 0)
        fmt::print(stderr, "pd-quant: warning: '{}' saw {} NaN or Inf values in calibration; they were left out of its range\n",
                   name, obs.non_finite());
    quantize = [&](const std::vector<std::string>& kept, const std::vector<std::string>& full_bits) {
      pd::quant::QdqOptions qk = q;
      qk.exclude.insert(qk.exclude.end(), kept.begin(), kept.end());
      qk.full_bits = full_bits;
      pd::ir::Program p = program;
      pd::quant::insert_qdq(p, observers, qk);
      return p;
    };
  }

  pd::ir::Program quantized;
  std::vector<std::string> fell_back, full_bits;  // --max-drop's: layers in f32, layers with 8-bit weights
  std::string accuracy_line, table;
  double drop = 0;
  bool met = true;
  if (o.eval.empty()) {
    quantized = quantize({}, {});
  } else {
    const pd::tools::TestSet eval = pd::tools::load_test_set(program, o.eval, o.eval_limit, "--eval");
    const pd::tools::Evaluator evaluator(program, eval.input, batches_of(eval, o.batch));
    pd::tools::Score score;
    if (o.max_drop >= 0) {
      pd::tools::BudgetResult r = pd::tools::fit_budget(program, layers, quantize, evaluator, o.max_drop, weight_bits(o) < 8);
      table = pd::tools::format_budget_table(r, evaluator.f32_accuracy());
      for (const auto& l : r.layers) {
        if (!l.int8) fell_back.push_back(l.name);
        else if (l.full_bits) full_bits.push_back(l.name);
      }
      quantized = std::move(r.program), score = r.score, met = r.met;
    } else {
      quantized = quantize({}, {});
      score = evaluator.score(quantized, "int8");
    }
    drop = evaluator.f32_accuracy() - score.accuracy;
    accuracy_line = fmt::format("accuracy   f32 {:.4f}, quantized {:.4f} ({:+.4f}) on {} samples\n", evaluator.f32_accuracy(),
                                score.accuracy, score.accuracy - evaluator.f32_accuracy(), evaluator.samples());
  }
  const int64_t ops_quantized = static_cast<int64_t>(layers.size() - fell_back.size());

  if (o.weight_only)
    fmt::print("quantized  {} linear / matmul weights: s8{} per {}, activations f32 (weight-only)\n", ops_quantized,
               bits_note(o), o.per_tensor ? "tensor" : "output channel");
  else
    fmt::print("quantized  {} conv2d / linear ops: activations {} ({}), weights s8{} per {}\n", ops_quantized, o.activations,
               o.method, bits_note(o), o.per_tensor ? "tensor" : "output channel");
  if (o.report && !o.weight_only) {
    fmt::print("{:<24} {:>12} {:>12} {:>12} {:>10}  {}\n", "activation", "min", "max", "scale", "zero point", "read by");
    const auto read_by = readers(program);
    for (const std::string& name : pd::quant::quantizable_inputs(program, o.exclude)) {
      const pd::quant::Observer& obs = observers.at(name);
      const pd::quant::QParams p = pd::quant::qparams_for(obs.range(q.method, q.percentile), q.activations);
      fmt::print("{:<24} {:>12.5g} {:>12.5g} {:>12.5g} {:>10}  {}\n", name, obs.min(), obs.max(), p.scale, p.zero_point,
                 fmt::join(read_by.at(name), ", "));
    }
  }
  fmt::print("{}{}", table, accuracy_line);
  if (!fell_back.empty()) fmt::print("fallback   {} in f32 (--exclude {} does the same)\n", fmt::join(fell_back, ", "), fmt::join(fell_back, ","));
  if (!o.weight_only)
    fmt::print("int8 path  {}{}\n", pd::int8_path_name(),
               !pd::cpu_has_vnni() && weight_bits(o) == 6 ? "; 6-bit weights: two pair sums a vpmaddwd" : "");
  if (!met) {
    fmt::print(stderr, "pd-quant: error: no quantized model meets --max-drop {}: with only the least sensitive layer in int8 the drop is {:.4f}; nothing written\n",
               o.max_drop, drop);
    return 1;
  }

  std::map<std::string, std::string> metadata;
  metadata["quantized_by"] =
      o.weight_only ? fmt::format("pd-quant --weight-only --{}{}", o.per_tensor ? "per-tensor" : "per-channel", bits_flag(o))
                    : fmt::format("pd-quant --method {} --activations {} --{}{} ({} samples)", o.method, o.activations,
                                  o.per_tensor ? "per-tensor" : "per-channel", bits_flag(o), calib_samples);
  if (!fell_back.empty()) metadata["kept_f32"] = fmt::format("{}", fmt::join(fell_back, ","));
  if (!full_bits.empty()) metadata["kept_8bit_weights"] = fmt::format("{}", fmt::join(full_bits, ","));
  pd::io::save_program(o.out, quantized, metadata);
  fmt::print("params     {:.1f} KiB -> {:.1f} KiB\n", file_bytes(pd::io::params_path_for(o.model)) / 1024.0,
             file_bytes(pd::io::params_path_for(o.out)) / 1024.0);
  fmt::print("wrote      {} (QDQ form; pd-infer and pd-opt lower it to {} kernels)\n", o.out, o.weight_only ? "weight-only int8" : "int8");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  pd::tools::bound_openmp_spin(argv);
  CLI::App app{"pd-quant: post-training quantization into the QDQ form (docs/pd-quant.md)", "pd-quant"};
  Options o;
  app.add_option("model", o.model, "MODEL.pdmodel to quantize (batch norms are folded first, as pd-opt -O2 does)")->required();
  app.add_option("output", o.out, "where to write the quantized model (.pdmodel; its .pdiparams goes next to it)")->required();
  app.add_option("--calib", o.calib, "a YAML with a model-YAML style data.test source: the calibration samples (required unless --weight-only)");
  app.add_option("--samples", o.samples, "calibration samples to use (default 512)")->check(pd::tools::positive<int64_t>());
  app.add_option("--batch", o.batch, "batch size for calibration and --eval (default 64)")->check(pd::tools::positive<int64_t>());
  app.add_option("--method", o.method, "activation ranges: minmax, percentile (default), kl, mse");
  app.add_option("--percentile", o.percentile, "with --method percentile (default 99.99)")
      ->check(pd::tools::number_in(50, 100, "a percentile in (50, 100] (the share of values inside the range)", true));
  app.add_option("--activations", o.activations, "u8 (asymmetric, default) or s8 (symmetric)");
  app.add_flag("--per-tensor", o.per_tensor, "one weight scale per tensor instead of per output channel");
  auto* bits = app.add_option("--weight-bits", o.weight_bits,
                               "8 (default); 7: exact on CPUs without VNNI, which otherwise halve 8-bit weights at run time; "
                               "6: 1.2-1.3x faster int8 convolutions there, less precise weights (check with --eval)")
                   ->check(CLI::Range(6, 8));
  app.add_flag("--reduce-range", o.reduce_range, "--weight-bits 7 (onnxruntime's name)")->excludes(bits);
  app.add_option("--exclude", o.exclude, "leave these in f32: op types, output value or weight param names")
      ->delimiter(',');
  app.add_option("--eval", o.eval, "a YAML with a data.test source: report f32 and quantized accuracy");
  app.add_option("--eval-limit", o.eval_limit, "with --eval: use only the first N samples")->check(pd::tools::positive<int64_t>());
  app.add_option("--max-drop", o.max_drop,
                 "with --eval: the accuracy the int8 model may lose (absolute, e.g. 0.005); the most sensitive layers fall back to f32 until it holds, exit 1 if it cannot")
      ->check(pd::tools::number_in(0, 1, "an absolute accuracy drop in [0, 1)"));
  app.add_flag("--weight-only", o.weight_only, "quantize only linear / matmul weights (s8, 4x smaller), activations stay f32; no calibration");
  app.add_flag("--report", o.report, "print each activation's observed range, scale and zero point");
  app.add_option("--cache-dir", o.cache_dir, "where calibration statistics are cached (default $XDG_CACHE_HOME/pd-quant or ~/.cache/pd-quant)");
  app.add_flag("--no-cache", o.no_cache, "neither read nor write cached calibration statistics");
  app.add_option("--threads", o.threads, "CPU threads for the kernels")->check(pd::tools::positive<int>());
  return pd::tools::run_tool("pd-quant", app, argc, argv, [&] {
    try {
      return run(o);
    } catch (const pd::tools::InputError& e) {
      fmt::print(stderr, "pd-quant: error: {}\n", e.what());
      return 2;
    }
  });
}
