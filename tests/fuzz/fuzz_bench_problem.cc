// pd-bench problem strings: "OP PROBLEM", e.g. "conv2d mb32ic64ih56oc64kh3ph1".
#include "fuzz_util.h"
#include "pd/bench/problem.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = pd_fuzz::bytes(data, size);
  const size_t space = input.find(' ');
  if (space == std::string::npos) return 0;
  return pd_fuzz::run([&] {
    const pd::OpSchema& op = pd::op_schema(input.substr(0, space));
    const pd::BenchProblem p = pd::bench::parse_problem_string(op, input.substr(space + 1));
    pd::bench::problem_label(op, p);
  });
}
