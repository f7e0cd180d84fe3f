#include "jobs.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <sstream>

#include "pd/bench/problem.h"

namespace pd::tools {

static const OpSchema& find_op(const std::string& name) {
  for (const auto& s : all_op_schemas())
    if (s.name == name) return s;
  auto near = bench::close_op_names(name);
  raise(ErrorCode::kInvalidArgument, "unknown op '{}'{}", name,
        near.empty() ? std::string(" (pd-bench --list shows them all)") : fmt::format(" (did you mean: {}?)", fmt::join(near, ", ")));
}

std::vector<Job> jobs_for(const ProblemArgs& a) {
  std::vector<Job> jobs;
  if (a.op.empty()) {
    PD_CHECK(a.shape.empty() && a.inputs.empty() && a.attrs.empty(), ErrorCode::kInvalidArgument,
             "--shape, --input and --attr need an op name");
    for (const auto& s : all_op_schemas())
      for (const auto& p : s.bench) jobs.push_back({&s, p, bench::problem_label(s, p), true});
    return jobs;
  }
  const OpSchema& s = find_op(a.op);
  PD_CHECK(a.shape.empty() || (a.inputs.empty() && a.attrs.empty()), ErrorCode::kInvalidArgument,
           "give either --shape or --input/--attr, not both");
  if (!a.shape.empty()) {
    jobs.push_back({&s, bench::parse_problem_string(s, a.shape), a.shape, false});
  } else if (!a.inputs.empty() || !a.attrs.empty()) {
    BenchProblem p = bench::problem_from_flags(s, a.inputs, a.attrs);
    jobs.push_back({&s, p, bench::problem_label(s, p), false});
  } else {
    PD_CHECK(!s.bench.empty(), ErrorCode::kInvalidArgument, "{}: no bench problems in ops.yaml; give --shape or --input", s.name);
    for (const auto& p : s.bench) jobs.push_back({&s, p, bench::problem_label(s, p), false});
  }
  return jobs;
}

std::vector<Job> jobs_from_batch_file(const std::string& path) {
  std::ifstream in(path);
  PD_CHECK(in.good(), ErrorCode::kIO, "--batch {}: cannot read the file", path);
  std::vector<Job> jobs;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream ss(line);
    std::vector<std::string> words;
    for (std::string w; ss >> w;) words.push_back(w);
    if (words.empty()) continue;
    if (words[0] == "pd-bench") words.erase(words.begin());
    ProblemArgs a;
    CLI::App app{"batch line"};
    app.add_option("op", a.op)->required();
    app.add_option("--shape", a.shape);
    app.add_option("--input", a.inputs);
    app.add_option("--attr", a.attrs);
    try {
      std::vector<std::string> rev(words.rbegin(), words.rend());
      app.parse(rev);
      auto more = jobs_for(a);
      jobs.insert(jobs.end(), more.begin(), more.end());
    } catch (const CLI::ParseError& e) {
      raise(ErrorCode::kParse, "{}:{}: {} (a batch line holds an op and its --shape, --input, --attr)", path, n, e.what());
    } catch (const Error& e) {
      raise(e.code(), "{}:{}: {}", path, n, e.what());
    }
  }
  PD_CHECK(!jobs.empty(), ErrorCode::kParse, "--batch {}: no problems in the file", path);
  return jobs;
}

}  // namespace pd::tools
