// The problems one pd-bench invocation runs: from the op name and its flags, from every op's ops.yaml
// problems, or from a --batch file with one command line's worth per line.
#pragma once
#include <string>
#include <vector>

#include "pd/ops/op_schema.h"

namespace pd::tools {

struct ProblemArgs {
  std::string op, shape;
  std::vector<std::string> inputs, attrs;
};

struct Job {
  const OpSchema* op;
  BenchProblem problem;
  std::string label;
  bool from_yaml;  // one of the op's own problems (skipped quietly where no kernel fits)
};

// Throws pd::Error for unknown ops (naming close matches) and malformed problems.
std::vector<Job> jobs_for(const ProblemArgs& a);
// FILE:LINE in every error.
std::vector<Job> jobs_from_batch_file(const std::string& path);

}  // namespace pd::tools
