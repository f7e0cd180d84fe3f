// Bench problems: the shapes and attributes of one op call, from ops.yaml, from benchdnn-like problem
// strings (docs/pd-bench.md) or from explicit --input/--attr flags, and the random inputs they need.
//
//   pd::BenchProblem p = pd::bench::parse_problem_string(pd::op_schema("conv2d"), "mb32ic64ih56oc64kh3ph1");
//   pd::BoxedInputs in = pd::bench::make_inputs(pd::op_schema("conv2d"), p, pd::DType::f32, /*seed=*/1);
#pragma once
#include <string>
#include <vector>

#include "pd/ops/op_schema.h"

namespace pd::bench {

// All throw pd::Error (kParse / kInvalidArgument) naming what was wrong.
BenchProblem parse_problem_string(const OpSchema& op, const std::string& text);
// inputs: "x=64x3x32x32" ("x=" for a 0-D tensor, "xs=2x3,4x5" for a Tensor[]); attrs: "padding=1,1".
BenchProblem problem_from_flags(const OpSchema& op, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& attrs);
AttrValue parse_attr(const OpSchema& op, const std::string& name, const std::string& text);

// "x=64x784 y=784x256 padding=1,1": a row label that is also the flags' grammar.
std::string problem_label(const OpSchema& op, const BenchProblem& p);
// "--input x=64x784 --input y=784x256 --attr padding=1,1": for reproducer command lines.
std::string problem_flags(const OpSchema& op, const BenchProblem& p);

// Random inputs in the problem's value ranges; "" dtypes become `dtype`. Integer and bool inputs get
// whole numbers in [lo, hi).
BoxedInputs make_inputs(const OpSchema& op, const BenchProblem& p, DType dtype, uint64_t seed);
// Op names nearest to `name` (edit distance), for "unknown op" errors.
std::vector<std::string> close_op_names(const std::string& name);

}  // namespace pd::bench
