// ops.yaml: an op's arguments (NAME: TYPE [= DEFAULT]) and outputs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <map>

#include "parse_helpers.h"

namespace pd::codegen {

// Turns the YAML text of a default value into a C++ expression of the attribute's type.
std::string default_to_cpp(ArgKind kind, const std::string& text, const YAML::Node& where) {
  auto bad = [&](const char* expected) {
    fail(where, fmt::format("bad default value '{}': expected {}", text, expected));
  };
  auto is_int = [](const std::string& s) {
    if (s.empty()) return false;
    size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (i == s.size()) return false;
    for (; i < s.size(); ++i)
      if (!isdigit(static_cast<unsigned char>(s[i]))) return false;
    return true;
  };
  auto is_float = [&](const std::string& s) {
    if (is_int(s)) return true;
    char* end = nullptr;
    std::strtod(s.c_str(), &end);
    return !s.empty() && end == s.c_str() + s.size();
  };
  auto list_items = [&](const std::string& s) {
    if (s.size() < 2 || s.front() != '[' || s.back() != ']') bad("a list such as [1, 2]");
    std::vector<std::string> items;
    std::string body = s.substr(1, s.size() - 2);
    size_t start = 0;
    while (start <= body.size()) {
      size_t comma = body.find(',', start);
      std::string item = trim(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!item.empty()) items.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return items;
  };
  switch (kind) {
    case ArgKind::Int:
      if (!is_int(text)) bad("an integer");
      return text;
    case ArgKind::Float:
      if (!is_float(text)) bad("a number");
      return text.find_first_of(".eE") == std::string::npos ? text + ".0" : text;
    case ArgKind::Bool:
      if (text != "true" && text != "false") bad("true or false");
      return text;
    case ArgKind::IntList: {
      std::vector<std::string> items = list_items(text);
      for (auto& i : items)
        if (!is_int(i)) bad("a list of integers");
      return fmt::format("std::vector<int64_t>{{{}}}", fmt::join(items, ", "));
    }
    case ArgKind::FloatList: {
      std::vector<std::string> items = list_items(text);
      for (auto& i : items)
        if (!is_float(i)) bad("a list of numbers");
      return fmt::format("std::vector<double>{{{}}}", fmt::join(items, ", "));
    }
    case ArgKind::Str:
      return fmt::format("std::string(\"{}\")", text);
    case ArgKind::DType:
      if (!kDTypes.count(text)) bad("a dtype name such as f32");
      return fmt::format("::pd::DType::{}", text == "bool" ? "boolean" : text);
    case ArgKind::OptionalTensor:
      if (text != "none") bad("none");
      return "::pd::Tensor()";
    default:
      break;
  }
  bad("no default (tensor inputs cannot have one)");
  return "";
}

ArgDef parse_arg(const std::string& name, const YAML::Node& node) {
  ArgDef a;
  a.name = name;
  a.pos = pos_of(node);
  std::string spec = scalar(node, fmt::format("the type of argument '{}'", name));
  std::string type = spec, def;
  if (size_t eq = spec.find('='); eq != std::string::npos) {
    type = trim(spec.substr(0, eq));
    def = trim(spec.substr(eq + 1));
  }
  std::string cls;
  if (size_t lt = type.find('<'), gt = type.find('>'); lt != std::string::npos && gt != std::string::npos && gt > lt) {
    cls = type.substr(lt + 1, gt - lt - 1);
    type = type.substr(0, lt);
  }
  static const std::map<std::string, ArgKind> kinds = {
      {"Tensor", ArgKind::Tensor}, {"Tensor?", ArgKind::OptionalTensor}, {"Tensor[]", ArgKind::TensorList},
      {"int", ArgKind::Int},       {"float", ArgKind::Float},            {"bool", ArgKind::Bool},
      {"int[]", ArgKind::IntList}, {"float[]", ArgKind::FloatList},      {"str", ArgKind::Str},
      {"dtype", ArgKind::DType}};
  // Tensor<int>? and Tensor<int>[] put the suffix after the class
  if (!cls.empty()) {
    if (size_t gt = spec.find('>'); gt != std::string::npos) {
      std::string suffix = trim(spec.substr(gt + 1, spec.find('=') == std::string::npos ? std::string::npos
                                                                                       : spec.find('=') - gt - 1));
      type = "Tensor" + suffix;
    }
    if (cls != "int" && cls != "bool" && cls != "any")
      fail(node, fmt::format("unknown tensor dtype class '{}' in '{}': expected int, bool or any", cls, spec));
  }
  // enum(activation): a str whose value must name a member of that generated enum (elementwise_ops.h).
  if (type.rfind("enum(", 0) == 0 && type.back() == ')') {
    a.enum_of = type.substr(5, type.size() - 6);
    if (a.enum_of != "activation")
      fail(node, fmt::format("unknown enum '{}' for argument '{}': pd-codegen generates enum(activation)", a.enum_of, name));
    type = "str";
  }
  auto it = kinds.find(type);
  if (it == kinds.end())
    fail(node, fmt::format("unknown type '{}' for argument '{}': expected one of Tensor, Tensor?, Tensor[], int, "
                           "float, bool, int[], float[], str, enum(activation), dtype",
                           type, name));
  a.kind = it->second;
  a.dtype_class = cls;
  if (!def.empty()) {
    a.default_text = def;
    a.default_cpp = default_to_cpp(a.kind, def, node);
  } else if (a.kind == ArgKind::OptionalTensor) {
    a.default_text = "none";
    a.default_cpp = "::pd::Tensor()";
  }
  return a;
}

OutputDef parse_output(const std::string& name, const YAML::Node& node) {
  OutputDef o;
  o.name = name;
  o.pos = pos_of(node);
  if (!node.IsMap()) fail(node, fmt::format("output '{}' must be a map with 'shape' (and optional 'dtype', 'type')", name));
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    if (key == "shape") {
      o.infer = scalar(kv.second, "shape");
    } else if (key == "dtype") {
      o.dtype = scalar(kv.second, "dtype");
      if (!kDTypes.count(o.dtype) && o.dtype.rfind("attr:", 0) != 0)
        fail(kv.second, fmt::format("unknown output dtype '{}': expected a dtype name or attr:NAME", o.dtype));
    } else if (key == "type") {
      std::string t = scalar(kv.second, "type");
      if (t != "Tensor" && t != "Tensor[]") fail(kv.second, fmt::format("unknown output type '{}': expected Tensor or Tensor[]", t));
      o.is_list = t == "Tensor[]";
    } else if (key == "differentiable") {
      o.differentiable = kv.second.as<bool>();
    } else if (key == "inplace") {
      o.inplace = scalar(kv.second, "inplace");
      o.differentiable = false;
    } else {
      fail(kv.first, fmt::format("unknown key '{}' in output '{}': expected shape, dtype, type, differentiable, inplace", key,
                                 name));
    }
  }
  if (o.dtype == "bool" || o.dtype == "i64" || o.dtype == "i32") o.differentiable = false;
  return o;
}

}  // namespace pd::codegen
