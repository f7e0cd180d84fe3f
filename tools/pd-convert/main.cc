// pd-convert IN OUT: move models between this toolchain's format and ONNX (docs/pd-convert.md). IN's
// format is told by its bytes, OUT's by its extension.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "common/cli_checks.h"
#include "common/inputs.h"
#include "common/openmp_spin.h"
#include "common/output_path.h"
#include "common/tool_main.h"
#include "pd/data/readers.h"
#include "pd/exec/executor.h"
#include "pd/io/model_file.h"
#include "pd/io/model_format.h"
#include "pd/io/onnx.h"
#include "pd/io/paddle.h"
#include "verify.h"

namespace fs = std::filesystem;
using pd::io::ModelFormat;

namespace {

struct Options {
  std::string in, out;
  std::vector<std::string> input_shapes, inputs, references;
  int opset = 13;
  bool verify = false, report = false;
  std::string python, params;
  double atol = 1e-4, rtol = 1e-3;
  int64_t batch = 2;
};

[[noreturn]] void usage_error(const std::string& msg) { pd::raise(pd::ErrorCode::kInvalidArgument, "{}", msg); }

// "input=1x3x224x224"
std::map<std::string, pd::Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, pd::Shape> out;
  for (const std::string& s : specs) {
    const size_t eq = s.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      usage_error(fmt::format("--input-shape '{}': expected NAME=DIMS, e.g. input=1x3x224x224", s));
    pd::Shape shape;
    std::string dims = s.substr(eq + 1);
    size_t pos = 0;
    while (pos <= dims.size()) {
      const size_t x = std::min(dims.find('x', pos), dims.size());
      const std::string d = dims.substr(pos, x - pos);
      char* end = nullptr;
      const long long v = d == "?" ? -1 : std::strtoll(d.c_str(), &end, 10);  // ? keeps the model's extent
      if (d.empty() || (v != -1 && (*end || v < 1)))
        usage_error(fmt::format("--input-shape '{}': extent '{}' is neither a positive integer nor ? (DIMS is like 1x3x224x224 "
                                "or ?x128)", s, d));
      shape.push_back(v);
      pos = x + 1;
    }
    out[s.substr(0, eq)] = shape;
  }
  return out;
}

ModelFormat output_format(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".onnx") return ModelFormat::Onnx;
  if (ext == ".pdmodel") return ModelFormat::PdModel;
  usage_error(fmt::format("{}: the output's format follows its extension, and '{}' is neither .onnx nor .pdmodel", path,
                          ext.empty() ? "(none)" : ext));
}

std::string count_list(const std::map<std::string, int64_t>& counts) {
  std::vector<std::pair<int64_t, std::string>> v;
  for (const auto& [k, n] : counts) v.emplace_back(-n, k);
  std::sort(v.begin(), v.end());
  std::vector<std::string> parts;
  for (const auto& [n, k] : v) parts.push_back(fmt::format("{} x{}", k, -n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void print_report(const pd::ir::Program& p, ModelFormat from, const pd::io::OnnxImportReport& r,
                  const pd::io::PaddleImportReport& pr, double seconds) {
  if (from == ModelFormat::Onnx)
    fmt::print("source: ONNX opset {}, IR version {}, producer '{}', {} nodes: {}\n", r.opset, r.ir_version, r.producer,
               r.nodes, count_list(r.node_types));
  else if (!pr.format.empty())
    fmt::print("source: PaddlePaddle {} (version {}), {} ops: {}\nparams file: {}; {} bias adds taken into conv2d/linear\n",
               pr.format, pr.version, pr.ops, count_list(pr.op_types), pr.params_path.empty() ? "(none)" : pr.params_path,
               pr.fused);
  else
    fmt::print("source: {}\n", pd::io::model_format_name(from));
  std::map<std::string, int64_t> ops;
  for (const auto& op : p.ops()) ++ops[op.type];
  int64_t values = 0, bytes = 0;
  for (const auto& [name, t] : p.params()) {
    values += t.numel();
    bytes += t.numel() * static_cast<int64_t>(pd::dtype_size(t.dtype()));
  }
  fmt::print("program: {} ops: {}\n", p.ops().size(), count_list(ops));
  fmt::print("params: {} tensors, {} values ({:.1f} MiB); {} nodes folded at import\n", p.params().size(), values,
             bytes / 1048576.0, r.folded + pr.folded);
  fmt::print("inputs: {}\n", pd::exec::describe_inputs(p));
  std::vector<std::string> outs;
  for (size_t i = 0; i < p.outputs().size(); ++i)
    outs.push_back(fmt::format("{}: {}", p.output_names()[i], p.value(p.outputs()[i]).type.str()));
  fmt::print("outputs: {}\nconverted in {:.3f} s\n", fmt::join(outs, ", "), seconds);
}

std::vector<std::pair<std::string, pd::Tensor>> read_references(const pd::ir::Program& p, const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, pd::Tensor>> out;
  for (const std::string& s : specs) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos) usage_error(fmt::format("--reference '{}': expected OUTPUT=FILE.npy", s));
    const std::string name = s.substr(0, eq);
    if (std::find(p.output_names().begin(), p.output_names().end(), name) == p.output_names().end())
      usage_error(fmt::format("--reference '{}': the model has no output '{}' (outputs: {})", s, name,
                              fmt::join(p.output_names(), ", ")));
    out.emplace_back(name, pd::data::read_npy(s.substr(eq + 1)));
  }
  return out;
}

// Prints one line per output; true when all are within tolerance.
bool print_diffs(const char* against, const std::vector<pd::converter::OutputDiff>& diffs) {
  bool ok = true;
  for (const auto& d : diffs) {
    ok = ok && d.ok;
    if (!d.shape_ok) {
      fmt::print("verify vs {}: {}: MISMATCH: {}\n", against, d.name, d.note);
      continue;
    }
    std::string argmax = d.argmax_agree >= 0 ? fmt::format(", argmax agrees {}/{}", d.argmax_agree, d.rows) : "";
    const std::string of_largest = d.largest > 0 && d.max_abs > 0 ? fmt::format(" ({:.2g} of its largest |value|)", d.max_abs / d.largest) : "";
    fmt::print("verify vs {}: {}: max abs {:.3g}{}, max rel {:.3g}{} -> {}\n", against, d.name, d.max_abs, of_largest, d.max_rel,
               argmax, d.ok ? "ok" : "BEYOND TOLERANCE");
  }
  return ok;
}

// The verify step: returns the exit code (0 within tolerance, 1 beyond it or when nothing could check).
// `source` runs the source (or, for our own models, the exported ONNX file) in its own runtime.
int verify(const Options& o, const pd::ir::Program& ours, ModelFormat from, const pd::converter::SourceRuntime* source,
           const pd::io::OnnxExportReport* exported = nullptr) {
  std::map<std::string, pd::Tensor> in =
      o.inputs.empty() ? pd::tools::random_inputs(ours, o.batch, 0) : pd::tools::read_inputs(ours, o.inputs);
  pd::exec::ExecPlan plan = pd::exec::compile(ours);
  const std::vector<pd::Tensor> got = pd::exec::Executor(plan).run(in);
  bool ok = true, checked = false;
  if (!o.references.empty()) {
    ok = print_diffs("--reference", pd::converter::compare_outputs(ours, got, read_references(ours, o.references), o.atol, o.rtol)) && ok;
    checked = true;
  }
  if (source) {
    const char* runtime = source->kind == pd::converter::SourceRuntime::Paddle ? "paddle" : "onnxruntime";
    std::vector<std::pair<std::string, pd::Tensor>> ref;
    std::string why;
    if (pd::converter::run_source_runtime(*source, in, &ref, &why)) {
      ok = print_diffs(runtime, pd::converter::compare_outputs(ours, got, ref, o.atol, o.rtol)) && ok;
      checked = true;
    } else {
      fmt::print("verify: {} not available: {}\n", runtime, why);
    }
  }
  if (from == ModelFormat::PdModel && source) {
    // Round trip: the exported file imported again must compute exactly what the source did, unless ops
    // were written as several nodes (then within tolerance, and said so).
    const bool exact = !exported || exported->decomposed.empty();
    if (!exact) fmt::print("verify: round trip within tolerance, not bitwise: decomposed for ONNX: {}\n", count_list(exported->decomposed));
    pd::ir::Program back = pd::io::import_onnx(source->model_path);
    pd::exec::ExecPlan back_plan = pd::exec::compile(back);
    const std::vector<pd::Tensor> again = pd::exec::Executor(back_plan).run(in);
    std::vector<std::pair<std::string, pd::Tensor>> ref;
    for (size_t i = 0; i < again.size(); ++i) ref.emplace_back(back.output_names()[i], again[i]);
    ok = print_diffs(exact ? "re-import (round trip, bitwise)" : "re-import (round trip)",
                     pd::converter::compare_outputs(ours, got, ref, exact ? 0 : o.atol, exact ? 0 : o.rtol)) && ok;
    checked = true;
  }
  if (!checked) {
    fmt::print(stderr, "pd-convert: error: --verify found nothing to compare with: install the source's runtime "
                       "(onnxruntime or paddlepaddle) for the python given by --python, or give expected outputs with "
                       "--reference OUTPUT=FILE.npy\n");
    return 1;
  }
  fmt::print("verify: {} (atol {}, rtol {}, {} input{})\n", ok ? "PASS" : "FAIL", o.atol, o.rtol,
             o.inputs.empty() ? "random" : "given", o.inputs.size() == 1 ? "" : "s");
  return ok ? 0 : 1;
}

int run(const Options& o) {
  if (!fs::exists(o.in)) usage_error(fmt::format("{}: no such file", o.in));
  const ModelFormat to = output_format(o.out);
  std::error_code ec;
  if (fs::exists(o.out) && fs::equivalent(o.in, o.out, ec))
    usage_error(fmt::format("{}: the output is the input file; write the conversion elsewhere", o.out));
  std::string what;
  const ModelFormat from = pd::io::detect_model_format(o.in, &what);
  if (from == ModelFormat::Unknown) usage_error(fmt::format("{}: not a model this tool reads: {}", o.in, what));
  if (to == ModelFormat::PdModel) pd::tools::check_model_output(o.in, o.out, /*in_has_params=*/from != ModelFormat::Onnx);
  const bool paddle = from == ModelFormat::PaddleProgramDesc || from == ModelFormat::PaddlePir;
  if (!o.input_shapes.empty() && from == ModelFormat::PdModel)
    usage_error("--input-shape applies to ONNX and PaddlePaddle sources (a paddle-cpp model's inputs are already typed)");
  if (!o.params.empty() && !paddle) usage_error("--params applies to PaddlePaddle sources (their .pdiparams file)");

  const auto start = std::chrono::steady_clock::now();
  pd::io::OnnxImportReport report;
  pd::io::PaddleImportReport paddle_report;
  pd::ir::Program program;
  pd::converter::SourceRuntime source{pd::converter::SourceRuntime::Onnxruntime, o.python, o.in, ""};
  if (from == ModelFormat::Onnx) {
    pd::io::OnnxImportOptions opt;
    opt.input_shapes = parse_input_shapes(o.input_shapes);
    program = pd::io::import_onnx(o.in, opt, &report);
  } else if (paddle) {
    pd::io::PaddleImportOptions opt;
    opt.input_shapes = parse_input_shapes(o.input_shapes);
    opt.params_path = o.params;
    program = pd::io::import_paddle(o.in, opt, &paddle_report);
    source = {pd::converter::SourceRuntime::Paddle, o.python, o.in, paddle_report.params_path};
  } else {
    program = pd::io::load_program(o.in);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.report) print_report(program, from, report, paddle_report, seconds);

  if (to == ModelFormat::PdModel) {
    if (o.verify) {
      const int rc = verify(o, program, from, from == ModelFormat::PdModel ? nullptr : &source);
      if (rc) {
        fmt::print(stderr, "pd-convert: --verify failed; nothing was written\n");
        return rc;
      }
    }
    pd::io::save_program(o.out, program, {{"converted_from", o.in}, {"source_format", pd::io::model_format_name(from)}});
  } else {
    // Exported next to OUT first, so that a model failing --verify never replaces what OUT held.
    const std::string staging = o.verify ? o.out + ".verify.onnx" : o.out;
    pd::io::OnnxExportOptions opt;
    opt.opset = o.opset;
    opt.producer_version = "pd-convert";
    pd::io::OnnxExportReport exported;
    pd::io::export_onnx(program, staging, opt, &exported);
    if (o.verify) {
      int rc = 1;
      try {
        // our own model: the exported file runs in onnxruntime; an imported one: the source in its runtime
        pd::converter::SourceRuntime exported_rt{pd::converter::SourceRuntime::Onnxruntime, o.python, staging, ""};
        rc = verify(o, program, from, from == ModelFormat::PdModel ? &exported_rt : &source, &exported);
      } catch (...) {
        fs::remove(staging, ec);
        throw;
      }
      if (rc) {
        fs::remove(staging, ec);
        fmt::print(stderr, "pd-convert: --verify failed; nothing was written\n");
        return rc;
      }
      fs::rename(staging, o.out);
    }
  }
  fmt::print("pd-convert: wrote {} ({})\n", o.out, pd::io::model_format_name(to));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  pd::tools::bound_openmp_spin(argv);
  CLI::App app{"pd-convert: convert ONNX and PaddlePaddle models to paddle-cpp and back to ONNX (docs/pd-convert.md)", "pd-convert"};
  Options o;
  const char* py = std::getenv("PD_PYTHON");
  o.python = py && *py ? py : "python3";
  app.add_option("input", o.in, "the model to convert: ONNX, PaddlePaddle 2.x .pdmodel / 3.x .json, or paddle-cpp "
                 ".pdmodel (told by its content)")->required();
  app.add_option("output", o.out, "where to write: .onnx or .pdmodel (its .pdiparams goes next to it)")->required();
  app.add_option("--input-shape", o.input_shapes, "fix an ONNX or Paddle input's extents, NAME=1x3x224x224 "
                 "(repeatable); shape computations on them fold at import");
  app.add_option("--params", o.params, "a PaddlePaddle model's parameters (default: its path with .pdiparams)");
  app.add_option("--opset", o.opset, "ONNX opset to export at (11-17, default 13)")
      ->check(pd::tools::integer_in<int>(11, 17, "an ONNX opset from 11 to 17"));
  app.add_flag("--verify", o.verify, "run the converted model and the source on the same inputs and compare "
               "(onnxruntime or paddle through --python); exit 1 and write nothing beyond tolerance");
  app.add_option("--input", o.inputs, "--verify input NAME=FILE.npy (repeatable; default random)");
  app.add_option("--reference", o.references, "--verify expected output OUTPUT=FILE.npy (repeatable), for when no "
                 "runtime of the source is installed");
  app.add_option("--batch", o.batch, "--verify: the extent of dynamic dims in random inputs (default 2)")->check(pd::tools::positive<int64_t>());
  app.add_option("--atol", o.atol, "--verify absolute tolerance (default 1e-4)")->check(pd::tools::non_negative_number());
  app.add_option("--rtol", o.rtol, "--verify relative tolerance (default 1e-3)")->check(pd::tools::non_negative_number());
  app.add_option("--python", o.python, "the python with onnxruntime or paddle for --verify (default $PD_PYTHON or python3)");
  app.add_flag("--report", o.report, "print what the source holds and what it became: node and op counts, params, "
               "inputs, outputs, time");
  return pd::tools::run_tool("pd-convert", app, argc, argv, [&] { return run(o); });
}
