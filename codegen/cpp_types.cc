#include <fmt/format.h>
#include <fmt/ranges.h>

#include "op_model.h"

namespace pd::codegen {

std::string cpp_value_type(const ArgDef& a) {
  switch (a.kind) {
    case ArgKind::Tensor:
    case ArgKind::OptionalTensor: return "::pd::Tensor";
    case ArgKind::TensorList: return "std::vector<::pd::Tensor>";
    case ArgKind::Int: return "int64_t";
    case ArgKind::Float: return "double";
    case ArgKind::Bool: return "bool";
    case ArgKind::IntList: return "std::vector<int64_t>";
    case ArgKind::FloatList: return "std::vector<double>";
    case ArgKind::Str: return "std::string";
    case ArgKind::DType: return "::pd::DType";
  }
  return "?";
}

std::string cpp_param_type(const ArgDef& a) {
  switch (a.kind) {
    case ArgKind::Int:
    case ArgKind::Float:
    case ArgKind::Bool:
    case ArgKind::DType: return cpp_value_type(a);
    default: return "const " + cpp_value_type(a) + "&";
  }
}

std::string cpp_return_type(const OpDef& op) {
  if (op.outputs.size() == 1) return op.outputs[0].is_list ? "std::vector<::pd::Tensor>" : "::pd::Tensor";
  std::vector<std::string> parts;
  for (const auto& o : op.outputs) parts.push_back(o.is_list ? "std::vector<::pd::Tensor>" : "::pd::Tensor");
  return fmt::format("std::tuple<{}>", fmt::join(parts, ", "));
}

std::string attr_kind_name(ArgKind k) {
  switch (k) {
    case ArgKind::Tensor: return "Tensor";
    case ArgKind::OptionalTensor: return "Tensor?";
    case ArgKind::TensorList: return "Tensor[]";
    case ArgKind::Int: return "int";
    case ArgKind::Float: return "float";
    case ArgKind::Bool: return "bool";
    case ArgKind::IntList: return "int[]";
    case ArgKind::FloatList: return "float[]";
    case ArgKind::Str: return "str";
    case ArgKind::DType: return "dtype";
  }
  return "?";
}

}  // namespace pd::codegen
