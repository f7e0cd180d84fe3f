// The one harness every op test runs through (see ops.yaml `tests:`). For each sample it checks the
// op against an independent reference (a scalar expression from ops.yaml, or a naive-loop reference
// from naive/), runs an f64 gradcheck by central differences with a random cotangent, a
// gradgradcheck for ops marked twice_differentiable, f32 against f64, oneDNN against reference,
// fused grad kernels against the formula, and every `bad` sample must raise pd::Error naming the op.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "pd/pd.h"

namespace pd::test {

struct InputSpec {
  std::string name;
  std::vector<Shape> shapes;
  bool is_list;
  bool present;
  std::string dtype;  // "" = the dtype under test
  double lo, hi;
  bool differentiable;
};

struct Sample {
  std::vector<InputSpec> inputs;
  AttrMap attrs;
  std::string error;
  int yaml_line;
  bool gradcheck = true;  // false: the sample's gradients are not checked by finite differences (ops.yaml says why)
};

using ScalarRef = double (*)(const double*, const AttrMap&);
// Naive reference: f64 inputs (as boxed) -> f64 outputs.
using NaiveRef = std::function<std::vector<Tensor>(const BoxedInputs&, const AttrMap&)>;

struct OpTestSpec {
  std::string op;
  int yaml_line = 0;
  ScalarRef ref = nullptr;
  std::vector<Sample> samples, bad;
  bool twice_differentiable = false, gradcheck = true, has_fused_grad = false;
  double f32_tol = 1e-4, f64_tol = 1e-9;
  std::string checked_by;
};

void run_op_tests(const OpTestSpec& spec);
// The op's CUDA kernels against its CPU kernels on the same inputs (cuda:0): outputs and gradients in
// each dtype both have, f16/bf16 against f32, and the bad samples with GPU inputs.
void run_cuda_op_tests(const OpTestSpec& spec);
double attr_number(const AttrMap& attrs, const char* name, double fallback);

// Naive references register themselves by op name.
bool register_naive(const std::string& op, NaiveRef ref);
const NaiveRef* find_naive(const std::string& op);
#define PD_NAIVE_REF(op)                                                                              \
  static std::vector<::pd::Tensor> naive_##op(const ::pd::BoxedInputs& in, const ::pd::AttrMap& attrs); \
  static const bool naive_registered_##op = ::pd::test::register_naive(#op, naive_##op);             \
  static std::vector<::pd::Tensor> naive_##op(const ::pd::BoxedInputs& in, const ::pd::AttrMap& attrs)

}  // namespace pd::test
