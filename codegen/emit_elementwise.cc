// elementwise_ops.h: what kernels, passes and model layers know about elementwise ops, from ops.yaml
// alone: each op's scalar formula (`scalar:`), the activations fused ops apply (`activation: true`) and
// fused_elementwise's function table. A new activation is one ops.yaml entry and its kernel file.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emitters.h"
#include "writer.h"

namespace pd::codegen {
namespace {

std::vector<std::string> attr_names(const OpDef& op) {
  std::vector<std::string> out;
  for (const ArgDef* a : op.attr_args()) out.push_back(a->name);
  return out;
}

// "T x, T y, T alpha" and "x, y, alpha" of an op's scalar function.
std::string scalar_params(const OpDef& op, bool types) {
  std::vector<std::string> ps;
  for (const ArgDef* a : op.tensor_args()) ps.push_back(types ? "T " + a->name : a->name);
  for (const std::string& n : attr_names(op)) ps.push_back(types ? "T " + n : n);
  return fmt::format("{}", fmt::join(ps, ", "));
}

std::string scalar_functions(const std::vector<const OpDef*>& ops) {
  std::string decls, defs;
  for (const OpDef* op : ops) {
    decls += fmt::format("template <typename T>\nPD_HOST_DEVICE T {}({});\n", op->name, scalar_params(*op, true));
    defs += fmt::format("template <typename T>\nPD_HOST_DEVICE inline T {}({}) {{\n  return static_cast<T>({});\n}}\n", op->name,
                        scalar_params(*op, true), op->scalar);
  }
  return "namespace pd::scalar {\n\n" + decls + "\n" + defs + "\n}  // namespace pd::scalar\n";
}

std::string activations(const std::vector<const OpDef*>& acts) {
  std::vector<std::string> enums = {"none"}, infos = {"{\"none\", nullptr}"}, names = {"none"}, cases, dispatch;
  std::string compile_time = "  if constexpr (A == Activation::none) return x;\n";
  for (const OpDef* op : acts) {
    const std::vector<std::string> attrs = attr_names(*op);
    enums.push_back(op->name);
    names.push_back(op->name);
    infos.push_back(fmt::format("{{\"{}\", {}}}", op->name, attrs.empty() ? "nullptr" : "\"" + attrs[0] + "\""));
    compile_time += fmt::format("  else if constexpr (A == Activation::{0}) return scalar::{0}(x{1});\n", op->name,
                                attrs.empty() ? "" : ", alpha");
    cases.push_back(fmt::format("    case Activation::{0}: return activate<Activation::{0}>(x, alpha);", op->name));
    dispatch.push_back(fmt::format("    case Activation::{0}: return f(std::integral_constant<Activation, Activation::{0}>{{}});", op->name));
  }
  std::string h = R"(
// The activations fused ops (fused_conv2d, fused_linear, winograd_conv2d, fused_conv2d_maxpool) apply:
// "none" and every op marked `activation: true`; alpha is the op's float attribute, if it has one.
)";
  h += fmt::format("enum class Activation : uint8_t {{ {} }};\n", fmt::join(enums, ", "));
  h += "struct ActivationInfo {\n  const char* name;\n  const char* alpha;  // the op's float attribute, or null\n};\n";
  h += fmt::format("inline constexpr ActivationInfo kActivations[] = {{{}}};\n", fmt::join(infos, ", "));
  h += fmt::format("inline constexpr size_t kActivationCount = {};\n\n", enums.size());
  h += fmt::format(R"(// The activation `name` names; throws pd::Error naming `op` and the valid names.
inline Activation parse_activation(const char* op, const std::string& name) {{
  for (size_t i = 0; i < kActivationCount; ++i)
    if (name == kActivations[i].name) return static_cast<Activation>(i);
  raise(ErrorCode::kInvalidArgument, "{{}}: argument 'activation' must be one of {}, but received '{{}}'", op, name);
}}

// The activation's formula, chosen at compile time (kernels instantiate one loop per activation) ...
template <Activation A, typename T>
PD_HOST_DEVICE inline T activate(T x, [[maybe_unused]] T alpha) {{
{}}}

// ... or at run time.
template <typename T>
PD_HOST_DEVICE inline T activate(Activation a, T x, T alpha) {{
  switch (a) {{
    case Activation::none: return x;
{}
  }}
  return x;
}}

// Calls f(std::integral_constant<Activation, A>{{}}) for the activation a holds at run time.
template <typename F>
inline decltype(auto) dispatch_activation(Activation a, F&& f) {{
  switch (a) {{
{}
    case Activation::none: break;
  }}
  return f(std::integral_constant<Activation, Activation::none>{{}});
}}
)",
                   fmt::join(names, ", "), compile_time, fmt::join(cases, "\n"), fmt::join(dispatch, "\n"));
  return h;
}

std::string ewise_table(const std::vector<const OpDef*>& ops) {
  std::vector<std::string> enums, infos, dispatch;
  std::string compile_time;
  for (const OpDef* op : ops) {
    const std::vector<std::string> attrs = attr_names(*op);
    const size_t tensors = op->tensor_args().size();
    std::vector<std::string> consts;
    for (const std::string& a : attrs) consts.push_back("\"" + a + "\"");
    enums.push_back(op->name);
    infos.push_back(fmt::format("{{\"{}\", {}, {}, {{{}}}}}", op->name, tensors, attrs.size(), fmt::join(consts, ", ")));
    std::vector<std::string> args = {"x"};
    if (tensors == 2) args.push_back("y");
    for (size_t i = 0; i < attrs.size(); ++i) args.push_back(fmt::format("c[{}]", i));
    compile_time += fmt::format("  {}if constexpr (F == EwiseFn::{}) return scalar::{}({});\n", compile_time.empty() ? "" : "else ",
                                op->name, op->name, fmt::join(args, ", "));
    dispatch.push_back(fmt::format("    case EwiseFn::{0}: return f(std::integral_constant<EwiseFn, EwiseFn::{0}>{{}});", op->name));
  }
  std::string h = "\n// fused_elementwise's functions: every op with a scalar formula.\n";
  h += fmt::format("enum class EwiseFn : uint8_t {{ {} }};\n", fmt::join(enums, ", "));
  h += "struct EwiseFnInfo {\n  const char* name;\n  int tensors;     // operands (1 or 2)\n  int num_consts;  // the op's float "
       "attributes, in argument order\n  const char* consts[2];\n};\n";
  h += fmt::format("inline constexpr EwiseFnInfo kEwiseFns[] = {{\n    {}}};\n", fmt::join(infos, ",\n    "));
  h += fmt::format("inline constexpr size_t kEwiseFnCount = {};\n\n", enums.size());
  h += fmt::format(R"(// F over x (and y for two operands) with its constants c (on the host and, in CUDA code, the device).
template <EwiseFn F, typename T>
PD_HOST_DEVICE inline T ewise_eval(T x, [[maybe_unused]] T y, [[maybe_unused]] const T* c) {{
{}}}

// Calls f(std::integral_constant<EwiseFn, F>{{}}) for the function fn holds at run time.
template <typename Fn>
PD_HOST_DEVICE inline decltype(auto) dispatch_ewise(EwiseFn fn, Fn&& f) {{
  switch (fn) {{
{}
  }}
  return f(std::integral_constant<EwiseFn, EwiseFn::{}>{{}});
}}
)",
                   compile_time, fmt::join(dispatch, "\n"), ops.front()->name);
  return h;
}

// cuda_elementwise.cu: the CUDA kernel of every op with a `scalar:` formula and a `cuda:` kernels
// entry, as its formula over map_elementwise (kernels/cuda/elementwise.cuh). Always written; compiled
// only by CUDA builds.
std::string cuda_kernels(const std::vector<const OpDef*>& ops) {
  std::string c = kHeader;
  c += "#include \"cuda/elementwise.cuh\"\n#include \"elementwise_ops.h\"\n\nnamespace pd::kernels::cuda {\nnamespace {\n\n";
  std::string defs, inst;
  for (const OpDef* op : ops) {
    auto it = op->kernels.find("cuda");
    if (it == op->kernels.end()) continue;
    const std::vector<std::string> attrs = attr_names(*op);
    std::vector<std::string> members, params, args, ctor;
    for (const ArgDef* a : op->tensor_args()) {
      params.push_back("C " + a->name);
      args.push_back(a->name);
    }
    for (const std::string& a : attrs) {
      members.push_back(fmt::format("  double {};\n", a));
      args.push_back(fmt::format("static_cast<C>({})", a));
      ctor.push_back(a);
    }
    c += fmt::format("struct {}_fn {{\n{}  template <typename C>\n  __device__ C operator()({}) const {{ return ::pd::scalar::{}<C>({}); }}\n}};\n\n",
                     op->name, fmt::join(members, ""), fmt::join(params, ", "), op->name, fmt::join(args, ", "));
    std::vector<std::string> tensors;
    for (const ArgDef* a : op->tensor_args()) tensors.push_back(a->name);
    std::vector<std::string> types;
    for (const std::string& d : it->second)
      types.push_back(d == "f32" ? "float" : d == "f64" ? "double" : d == "f16" ? "::pd::float16" : d == "bf16" ? "::pd::bfloat16"
                      : d == "i32" ? "int32_t" : d == "i64" ? "int64_t" : d == "i8" ? "int8_t" : d == "u8" ? "uint8_t" : "bool");
    defs += fmt::format("template <typename T>\nvoid {0}{1} {{\n  map_elementwise<T>(ctx, \"{0}\", {0}_fn{{{2}}}, {3}, {4});\n}}\n\n",
                        op->name, kernel_params(*op, true), fmt::join(ctor, ", "), op->outputs[0].name, fmt::join(tensors, ", "));
    inst += fmt::format("PD_INSTANTIATE_KERNELS({}, cuda, {})\n", op->name, fmt::join(types, ", "));
  }
  c += "}  // namespace\n\n" + defs + "}  // namespace pd::kernels::cuda\n\n" + inst;
  return c;
}

}  // namespace

void emit_elementwise(const OpSet& set, const std::string& dir) {
  std::vector<const OpDef*> scalar_ops, acts;
  for (const auto& op : set.ops) {
    if (op.scalar.empty()) continue;
    scalar_ops.push_back(&op);
    if (op.activation) acts.push_back(&op);
  }
  std::string h = kHeader;
  h += R"(// The elementwise ops' scalar formulas, the activations fused ops apply and fused_elementwise's
// function table, all from ops.yaml (`scalar:`, `activation: true`). Kernels, passes and model layers
// read these instead of listing ops themselves.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "pd/core/error.h"

// The scalar formulas compile for CUDA device code too (kernels/cuda, generated cuda_elementwise.cu).
#ifdef __CUDACC__
#define PD_HOST_DEVICE __host__ __device__
#else
#define PD_HOST_DEVICE
#endif

)";
  h += scalar_functions(scalar_ops);
  h += "\nnamespace pd {\n" + activations(acts);
  if (!scalar_ops.empty()) h += ewise_table(scalar_ops);
  h += "\n}  // namespace pd\n";
  write_if_changed(dir + "/elementwise_ops.h", h);
  write_if_changed(dir + "/cuda_elementwise.cu", cuda_kernels(scalar_ops));
}

}  // namespace pd::codegen
