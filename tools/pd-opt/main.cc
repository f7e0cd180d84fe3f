// pd-opt IN [OUT]: optimise a model file with graph passes (docs/pd-opt.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "common/cli_checks.h"
#include "common/openmp_spin.h"
#include "common/output_path.h"
#include "common/tool_main.h"
#include "compare.h"
#include "pd/io/model_file.h"
#include "pd/ir/pass.h"

namespace {

// Exit codes: 2 for usage and input errors (flags, pass names, unreadable models), 1 for failures while
// optimising or verifying.
int error(const std::string& msg, int code) {
  fmt::print(stderr, "pd-opt: error: {}\n", msg);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  pd::tools::bound_openmp_spin(argv);
  CLI::App app{"pd-opt: optimise a model file with graph passes (docs/pd-opt.md)", "pd-opt"};
  std::string in_path, out_path;
  pd::ir::PassOptions opt;
  bool print_after_all = false, report = false, verify = false, print = false, list = false;
  std::string target;
  double rtol = 1e-4, atol = 1e-5;
  app.add_option("input", in_path, "the model to optimise (.pdmodel)");
  app.add_option("output", out_path, "where to write the optimised model (.pdmodel; its .pdiparams goes next to it)");
  app.add_option("-O", opt.level, "optimisation level 0-3 (default 2)")->check(pd::tools::integer_in<int>(0, 3, "an optimisation level from 0 to 3"));
  app.add_option("--passes", opt.passes, "run exactly these passes, in this order (comma-separated)")->delimiter(',');
  app.add_option("--disable", opt.disable, "leave these passes out (comma-separated)")->delimiter(',');
  app.add_option("--target", target,
                 "also lower for this target (host, cpu, cpu-avx2, cpu-avx512): the output runs only on such machines");
  app.add_flag("--print-after-all", print_after_all, "print the program's text form after every pass");
  app.add_flag("--report", report, "print what each pass did: ops before/after, removed, fused, folded, time");
  app.add_flag("--verify", verify, "run the original and the optimised model on random inputs and compare");
  app.add_option("--rtol", rtol, "relative tolerance of --verify")->check(pd::tools::non_negative_number());
  app.add_option("--atol", atol, "absolute tolerance of --verify")->check(pd::tools::non_negative_number());
  app.add_flag("--print", print, "print the optimised program's text form");
  app.add_flag("--list-passes", list, "list the passes and the levels, then exit");
  if (auto rc = pd::tools::parse_command_line("pd-opt", app, argc, argv)) return *rc;
  if (list) {
    for (const std::string& n : pd::ir::pass_names()) {
      auto pass = pd::ir::make_pass(n);
      fmt::print("{:<20} {:<9} {}\n", n, pass->lowering() ? "lowering" : "portable", pass->doc());
    }
    for (int l = 0; l <= 3; ++l) fmt::print("-O{}: {}\n", l, fmt::join(pd::ir::level_passes(l), " "));
    fmt::print("--target T: + {}\n", fmt::join(pd::ir::lowering_passes(), " "));
    return 0;
  }
  if (in_path.empty()) return error("no input model given (usage: pd-opt IN.pdmodel [OUT.pdmodel] [-O2] ...)", 2);
  if (out_path.empty() && !print && !report && !verify && !print_after_all)
    return error("no output model given and nothing to print (give OUT, --print, --report or --verify)", 2);

  // Bad flags and unreadable models are input errors (2); a failure while optimising is a runtime one (1).
  pd::ir::Program program, original;
  std::map<std::string, std::string> metadata;
  std::vector<pd::ir::PassStats> stats;
  std::vector<std::string> pm_pipeline;
  try {
    if (!out_path.empty()) pd::tools::check_model_output(in_path, out_path);
    if (print_after_all) opt.print_after = &std::cout;
    // Lowering makes a file for one kind of machine; pd-infer lowers portable models when it loads
    // them, so it is done here only when asked for by name.
    if (!target.empty()) opt.target = pd::Target::parse(target);
    opt.lower = !target.empty();
    for (const std::string& n : opt.passes)
      PD_CHECK(!target.empty() || !pd::ir::make_pass(n)->lowering(), pd::ErrorCode::kInvalidArgument,
               "pass '{}' lowers for a target and needs --target (e.g. --target host); pd-infer runs it when it loads "
               "a portable model", n);
    pd::ir::PassManager pm(opt);  // unknown pass names fail here, before any work
    for (const std::string& n : pm.skipped())
      fmt::print(stderr, "pd-opt: note: pass '{}' skipped: it does not support target {}\n", n, opt.target.str());
    pm_pipeline = pm.pipeline();
    program = pd::io::load_program(in_path, &metadata);
    original = program;
    try {
      stats = pm.run(program);
    } catch (const std::exception& e) {
      return error(e.what(), 1);
    }
  } catch (const pd::Error& e) {
    return error(e.what(), 2);
  }
  if (report) {
    fmt::print("{}", pd::ir::format_report(stats));
    if (target.empty())
      fmt::print("(fusions and Winograd are lowering passes: pd-infer runs them for its machine when it loads the "
                 "model; --target T runs them here)\n");
  }
  if (print) fmt::print("{}", pd::ir::print(program));
  try {
    if (verify) {
      pd::tools::VerifyResult r = pd::tools::compare_programs(original, program, rtol, atol);
      if (!r.ok) return error(r.message, 1);
      fmt::print(stderr, "{}\n", r.message);
    }
    if (!out_path.empty()) {
      metadata["optimized_by"] = fmt::format("pd-opt {}", fmt::join(pm_pipeline, ","));
      pd::io::save_program(out_path, program, metadata);
    }
  } catch (const std::exception& e) {
    return error(e.what(), 1);
  }
  return 0;
}
