// op_tests.cc: one Catch2 TEST_CASE per op, built from the op's `tests:` entry. The harness
// (tests/ops/op_test_harness.h) does the work: reference check, gradcheck, gradgradcheck, f32 vs f64,
// oneDNN vs reference, fused vs formula gradients, bad inputs.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emitters.h"
#include "writer.h"

namespace pd::codegen {
namespace {


std::string sample_cpp(const OpDef& op, const Sample& s, const char* list) {
  std::vector<std::string> ins, attrs;
  auto diff = op.diff_inputs();
  for (const ArgDef* a : op.tensor_args()) {
    auto it = s.inputs.find(a->name);
    std::vector<std::string> shapes;
    std::string dtype;
    double lo = -1, hi = 1;
    if (auto d = op.test.domain.find(a->name); d != op.test.domain.end()) std::tie(lo, hi) = d->second;
    bool present = it != s.inputs.end() && !it->second.shapes.empty();
    if (it != s.inputs.end()) {
      for (const auto& sh : it->second.shapes) shapes.push_back(fmt::format("::pd::Shape{{{}}}", fmt::join(sh, ", ")));
      dtype = it->second.dtype;
      if (it->second.has_range) std::tie(lo, hi) = std::pair(it->second.lo, it->second.hi);
    }
    bool is_diff = std::find(diff.begin(), diff.end(), a) != diff.end();
    ins.push_back(fmt::format("{{\"{}\", {{{}}}, {}, {}, \"{}\", {}, {}, {}}}", a->name, fmt::join(shapes, ", "),
                              a->kind == ArgKind::TensorList ? "true" : "false", present ? "true" : "false", dtype, lo, hi,
                              is_diff ? "true" : "false"));
  }
  for (const auto& [name, value] : s.attrs_cpp) attrs.push_back(fmt::format("{{\"{}\", {}}}", name, attr_value_cpp(*op.arg(name), value)));
  std::string err;
  for (char ch : s.error) err += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
  return fmt::format("  s.{}.push_back({{{{{}}}, {{{}}}, \"{}\", {}, {}}});\n", list, fmt::join(ins, ", "), fmt::join(attrs, ", "),
                     err, s.pos.line, s.gradcheck ? "true" : "false");
}

std::string ref_lambda(const OpDef& op) {
  if (op.test.ref.empty()) return "";
  std::string body;
  int i = 0;
  for (const ArgDef* a : op.tensor_args()) body += fmt::format("    const double {} = v[{}]; (void){};\n", a->name, i++, a->name);
  for (const ArgDef* a : op.attr_args())
    if (a->kind == ArgKind::Int || a->kind == ArgKind::Float || a->kind == ArgKind::Bool)
      body += fmt::format("    const double {0} = ::pd::test::attr_number(attrs, \"{0}\", {1}); (void){0};\n", a->name,
                          a->default_cpp ? *a->default_cpp : "0");
  return fmt::format("  s.ref = [](const double* v, const ::pd::AttrMap& attrs) -> double {{\n    (void)attrs;\n{}    return {};\n  }};\n",
                     body, op.test.ref);
}

}  // namespace

std::string attr_value_cpp(const ArgDef& a, const std::string& v) {
  switch (a.kind) {
    case ArgKind::Int: return fmt::format("::pd::AttrValue(static_cast<int64_t>({}))", v);
    case ArgKind::Float: return fmt::format("::pd::AttrValue(static_cast<double>({}))", v);
    case ArgKind::Bool: return fmt::format("::pd::AttrValue(static_cast<bool>({}))", v);
    default: return fmt::format("::pd::AttrValue({})", v);
  }
}

void emit_tests(const OpSet& set, const std::string& dir) {
  const std::string prelude =
      "#include <catch2/catch.hpp>\n\n#include \"op_test_harness.h\"\n\nusing std::abs, std::exp, std::log, std::sqrt, std::tanh, std::erf, std::pow;\n\n";
  std::string c = kHeader + prelude;
  // gpu_op_tests.cc: the ops with CUDA kernels, each against its CPU kernels on a GPU (label gpu).
  std::string g = kHeader + prelude;
  for (const auto& op : set.ops) {
    const TestSpec& t = op.test;
    std::string body = fmt::format("  ::pd::test::OpTestSpec s;\n  s.op = \"{}\";\n  s.yaml_line = {};\n", op.name, op.pos.line);
    body += ref_lambda(op);
    body += fmt::format("  s.twice_differentiable = {};\n  s.gradcheck = {};\n  s.f32_tol = {};\n  s.f64_tol = {};\n  s.has_fused_grad = {};\n  s.checked_by = \"{}\";\n",
                        t.twice_differentiable ? "true" : "false", t.gradcheck && op.differentiable() ? "true" : "false",
                        t.f32_tol, t.f64_tol, op.fused_backward.empty() ? "false" : "true", t.checked_by);
    for (const auto& smp : t.samples) body += sample_cpp(op, smp, "samples");
    for (const auto& smp : t.bad) body += sample_cpp(op, smp, "bad");
    c += fmt::format("TEST_CASE(\"op:{0}\", \"[op][{0}]\") {{\n{1}  ::pd::test::run_op_tests(s);\n}}\n\n", op.name, body);
    if (op.kernels.count("cuda"))
      g += fmt::format("TEST_CASE(\"gpu:{0}\", \"[gpu][{0}]\") {{\n{1}  ::pd::test::run_cuda_op_tests(s);\n}}\n\n", op.name, body);
  }
  write_if_changed(dir + "/op_tests.cc", c);
  write_if_changed(dir + "/gpu_op_tests.cc", g);
}

}  // namespace pd::codegen
