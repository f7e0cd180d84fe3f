// kernels.h: the exact signature each kernel must have. registry.{h,cc}: (op, backend, dtype) tables.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>

#include "emitters.h"
#include "writer.h"

namespace pd::codegen {
namespace {

// Text for a backend's kernels, inside #ifdef PD_WITH_<BACKEND> unless it is the always-built reference.
std::string guarded(const std::string& backend, const std::string& text) {
  if (backend == "reference") return text;
  std::string macro = "PD_WITH_";
  for (char c : backend) macro += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format("#ifdef {}\n{}#endif\n", macro, text);
}

}  // namespace

std::string dtype_enum(const std::string& name) {
  return "::pd::DType::" + (name == "bool" ? std::string("boolean") : name);
}

std::string kernel_params(const OpDef& op, bool with_names) {
  std::vector<std::string> ps = {with_names ? "const ::pd::KernelContext& ctx" : "const ::pd::KernelContext&"};
  for (const auto& a : op.args) {
    std::string t = a.kind == ArgKind::OptionalTensor ? "const ::pd::Tensor&" : cpp_param_type(a);
    ps.push_back(with_names ? t + " " + a.name : t);
  }
  for (const auto& o : op.outputs) {
    std::string t = o.is_list ? "std::vector<::pd::Tensor>&" : "::pd::Tensor&";
    ps.push_back(with_names ? t + " " + o.name : t);
  }
  return fmt::format("({})", fmt::join(ps, ", "));
}

void emit_kernels(const OpSet& set, const std::string& dir) {
  std::string h = kHeader;
  h += R"(// Every kernel is a template over the element type, defined in kernels/<backend>/ and instantiated
// there with PD_INSTANTIATE_KERNELS(op, backend, types...). A definition whose parameters differ from
// these declarations leaves the declared one undefined: a link error, never a silent mismatch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"

#define PD_KI_1(op, b, T) template void ::pd::kernels::b::op<T> PD_KERNEL_SIG_##op;
#define PD_KI_2(op, b, T, ...) PD_KI_1(op, b, T) PD_KI_1(op, b, __VA_ARGS__)
#define PD_KI_3(op, b, T, ...) PD_KI_1(op, b, T) PD_KI_2(op, b, __VA_ARGS__)
#define PD_KI_4(op, b, T, ...) PD_KI_1(op, b, T) PD_KI_3(op, b, __VA_ARGS__)
#define PD_KI_5(op, b, T, ...) PD_KI_1(op, b, T) PD_KI_4(op, b, __VA_ARGS__)
#define PD_KI_6(op, b, T, ...) PD_KI_1(op, b, T) PD_KI_5(op, b, __VA_ARGS__)
#define PD_KI_7(op, b, T, ...) PD_KI_1(op, b, T) PD_KI_6(op, b, __VA_ARGS__)
#define PD_KI_8(op, b, T, ...) PD_KI_1(op, b, T) PD_KI_7(op, b, __VA_ARGS__)
#define PD_KI_9(op, b, T, ...) PD_KI_1(op, b, T) PD_KI_8(op, b, __VA_ARGS__)
#define PD_KI_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, NAME, ...) NAME
// PD_INSTANTIATE_KERNELS(add, reference, float, double) instantiates add<float> and add<double>.
#define PD_INSTANTIATE_KERNELS(op, backend, ...)                                                        \
  PD_KI_PICK(__VA_ARGS__, PD_KI_9, PD_KI_8, PD_KI_7, PD_KI_6, PD_KI_5, PD_KI_4, PD_KI_3, PD_KI_2, PD_KI_1) \
  (op, backend, __VA_ARGS__)

)";
  std::map<std::string, std::string> per_backend;
  for (const auto& op : set.ops) {
    if (op.kernels.empty()) continue;
    h += fmt::format("#define PD_KERNEL_SIG_{} {}\n", op.name, kernel_params(op, false));
    for (const auto& [b, dts] : op.kernels)
      per_backend[b] += fmt::format("template <typename T>\nvoid {}{};\n", op.name, kernel_params(op, true));
  }
  // Backends other than reference are separate libraries built on request (PD_WITH_ONEDNN, PD_WITH_CUDA):
  // what they declare and register is compiled only into builds that have them.
  for (const auto& [b, decls] : per_backend)
    h += guarded(b, fmt::format("\nnamespace pd::kernels::{} {{\n{}}}  // namespace pd::kernels::{}\n", b, decls, b));
  write_if_changed(dir + "/kernels.h", h);

  std::string rh = kHeader;
  rh += "#pragma once\n#include \"kernels.h\"\n#include \"pd/ops/dispatch.h\"\n\nnamespace pd::registry {\n";
  std::string rc = kHeader;
  rc += "#include \"registry.h\"\n\n#include <map>\n\nnamespace pd::registry {\n";
  std::string listing;
  for (const auto& op : set.ops) {
    if (op.kernels.empty()) continue;
    rh += fmt::format("using {}_fn = void (*){};\n{}_fn find_{}(DType dtype, Place place);\n", op.name,
                      kernel_params(op, false), op.name, op.name);
    std::vector<std::string> entries, list_entries;
    // Preference order: fast backends first; select_kernel skips the ones switched off.
    for (const char* b : {"cuda", "onednn", "reference"}) {
      auto it = op.kernels.find(b);
      if (it == op.kernels.end()) continue;
      for (const auto& d : it->second) {
        std::string t = d == "f32" ? "float" : d == "f64" ? "double" : d == "f16" ? "::pd::float16"
                        : d == "bf16" ? "::pd::bfloat16" : d == "i8" ? "int8_t" : d == "u8" ? "uint8_t"
                        : d == "i32" ? "int32_t" : d == "i64" ? "int64_t" : "bool";
        entries.push_back(guarded(b, fmt::format("    {{Backend::{}, {}, &::pd::kernels::{}::{}<{}>}},\n", b, dtype_enum(d), b, op.name, t)));
        list_entries.push_back(guarded(b, fmt::format("       {{Backend::{}, {}}},\n", b, dtype_enum(d))));
      }
    }
    rc += fmt::format(
        "{0}_fn find_{0}(DType dtype, Place place) {{\n  static const KernelEntry<{0}_fn> table[] = {{\n{1}  }};\n"
        "  return select_kernel(\"{0}\", table, dtype, place);\n}}\n",
        op.name, fmt::join(entries, ""));
    listing += fmt::format("    {{\"{}\", {{\n{}     }}}},\n", op.name, fmt::join(list_entries, ""));
  }
  rh += "\n// (backend, dtype) pairs registered for an op, in preference order.\n"
        "const std::vector<KernelKey>& registered_kernels(const std::string& op);\n}  // namespace pd::registry\n";
  rc += fmt::format(
      "\nconst std::vector<KernelKey>& registered_kernels(const std::string& op) {{\n"
      "  static const std::map<std::string, std::vector<KernelKey>> all = {{\n{}  }};\n"
      "  static const std::vector<KernelKey> none;\n  auto it = all.find(op);\n"
      "  return it == all.end() ? none : it->second;\n}}\n}}  // namespace pd::registry\n",
      listing);
  write_if_changed(dir + "/registry.h", rh);
  write_if_changed(dir + "/registry.cc", rc);
}

}  // namespace pd::codegen
