// ops.yaml -> OpSet. Every error points at the YAML node it is about.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "formula.h"
#include "op_model.h"

namespace pd::codegen {
namespace {

std::string g_file;

[[noreturn]] void fail(const YAML::Mark& m, const std::string& msg) {
  throw CodegenError(fmt::format("{}:{}:{}: {}", g_file, m.line + 1, m.column + 1, msg));
}
[[noreturn]] void fail(const YAML::Node& n, const std::string& msg) { fail(n.Mark(), msg); }
Pos pos_of(const YAML::Node& n) { return {n.Mark().line + 1, n.Mark().column + 1}; }

std::string scalar(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) fail(n, fmt::format("{} must be a single value", what));
  return n.Scalar();
}

const std::set<std::string> kDTypes = {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64", "bool"};
const std::set<std::string> kBackends = {"reference", "onednn", "cuda"};

std::vector<std::string> expand_dtypes(const YAML::Node& list) {
  if (!list.IsSequence()) fail(list, "kernel dtypes must be a list such as [f32, f64]");
  std::vector<std::string> out;
  for (const auto& d : list) {
    std::string s = scalar(d, "a dtype");
    if (s == "float") {
      out.insert(out.end(), {"f32", "f64"});
    } else if (s == "int") {
      out.insert(out.end(), {"i32", "i64"});
    } else if (s == "all") {
      out.insert(out.end(), {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64", "bool"});
    } else if (kDTypes.count(s)) {
      out.push_back(s);
    } else {
      fail(d, fmt::format("unknown dtype '{}': expected one of f32 f64 f16 bf16 i8 u8 i32 i64 bool, or a group "
                          "float, int, all", s));
    }
  }
  return out;
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

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

std::string sample_attr_cpp(const ArgDef& a, const YAML::Node& v) {
  std::string text;
  if (v.IsSequence()) {
    std::vector<std::string> items;
    for (const auto& x : v) items.push_back(scalar(x, "a list item"));
    text = fmt::format("[{}]", fmt::join(items, ", "));
  } else {
    text = scalar(v, "an attribute value");
  }
  return default_to_cpp(a.kind, text, v);
}

Sample parse_sample(const OpDef& op, const YAML::Node& node, bool bad) {
  Sample s;
  s.pos = pos_of(node);
  if (!node.IsMap()) fail(node, "a test sample must be a map from argument name to shape");
  auto shape_of = [&](const YAML::Node& n) {
    if (!n.IsSequence()) fail(n, "a shape must be a list of extents such as [2, 3] ([] for 0-D)");
    std::vector<int64_t> shape;
    for (const auto& d : n) shape.push_back(d.as<int64_t>());
    return shape;
  };
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    if (key == "error") {
      if (!bad) fail(kv.first, "'error' is only allowed in 'bad' samples");
      s.error = scalar(kv.second, "error");
      continue;
    }
    if (key == "attrs") {
      for (const auto& av : kv.second) {
        std::string an = av.first.Scalar();
        const ArgDef* a = op.arg(an);
        if (!a || a->is_tensor()) fail(av.first, fmt::format("op '{}' has no attribute '{}'", op.name, an));
        s.attrs_cpp[an] = sample_attr_cpp(*a, av.second);
      }
      continue;
    }
    const ArgDef* a = op.arg(key);
    if (!a || !a->is_tensor()) fail(kv.first, fmt::format("op '{}' has no tensor input '{}'", op.name, key));
    SampleInput in;
    YAML::Node v = kv.second;
    if (v.IsMap()) {
      if (v["dtype"]) in.dtype = scalar(v["dtype"], "dtype");
      if (v["range"]) {
        in.lo = v["range"][0].as<double>();
        in.hi = v["range"][1].as<double>();
        in.has_range = true;
      }
      if (!v["shape"]) fail(v, "a sample input map needs 'shape'");
      v = v["shape"];
    }
    if (a->kind == ArgKind::TensorList) {
      for (const auto& sh : v) in.shapes.push_back(shape_of(sh));
    } else if (v.IsScalar() && v.Scalar() == "none") {
      if (a->kind != ArgKind::OptionalTensor && !bad) fail(v, fmt::format("input '{}' is not optional", key));
    } else {
      in.shapes.push_back(shape_of(v));
    }
    s.inputs[key] = in;
  }
  for (const ArgDef* a : op.tensor_args())
    if (!s.inputs.count(a->name) && a->kind != ArgKind::OptionalTensor && !bad)
      fail(node, fmt::format("test sample of '{}' does not give input '{}'", op.name, a->name));
  return s;
}

void parse_tests(OpDef& op, const YAML::Node& node) {
  TestSpec& t = op.test;
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    if (key == "ref") t.ref = scalar(kv.second, "ref");
    else if (key == "samples") for (const auto& s : kv.second) t.samples.push_back(parse_sample(op, s, false));
    else if (key == "bad") for (const auto& s : kv.second) t.bad.push_back(parse_sample(op, s, true));
    else if (key == "domain") {
      for (const auto& d : kv.second) {
        if (!op.arg(d.first.Scalar())) fail(d.first, fmt::format("domain names unknown input '{}'", d.first.Scalar()));
        t.domain[d.first.Scalar()] = {d.second[0].as<double>(), d.second[1].as<double>()};
      }
    } else if (key == "twice_differentiable") t.twice_differentiable = kv.second.as<bool>();
    else if (key == "gradcheck") t.gradcheck = kv.second.as<bool>();
    else if (key == "checked_by") t.checked_by = scalar(kv.second, "checked_by");
    else if (key == "tol") {
      if (kv.second["f32"]) t.f32_tol = kv.second["f32"].as<double>();
      if (kv.second["f64"]) t.f64_tol = kv.second["f64"].as<double>();
    } else fail(kv.first, fmt::format("unknown key '{}' in tests: expected ref, samples, bad, domain, "
                                      "twice_differentiable, gradcheck, checked_by, tol", key));
  }
  if (t.samples.empty()) fail(node, fmt::format("op '{}' has no test samples", op.name));
  if (t.bad.empty()) fail(node, fmt::format("op '{}' needs at least one 'bad' test sample", op.name));
}

std::vector<Formula> parse_formulas(const YAML::Node& node) {
  std::vector<Formula> out;
  if (!node.IsMap()) fail(node, "backward must map input names to formulas");
  for (const auto& kv : node) {
    Formula f;
    std::string targets = kv.first.Scalar();
    size_t start = 0;
    while (true) {
      size_t comma = targets.find(',', start);
      f.targets.push_back(trim(targets.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    f.text = scalar(kv.second, "a backward formula");
    f.pos = pos_of(kv.second);
    out.push_back(f);
  }
  return out;
}

std::vector<std::string> name_list(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n.IsScalar()) return {n.Scalar()};
  for (const auto& x : n) out.push_back(x.Scalar());
  return out;
}

OpDef parse_op(const YAML::Node& node, const std::string& category) {
  OpDef op;
  op.category = category;
  if (!node.IsMap() || !node["op"]) fail(node, "each entry must be a map starting with 'op: NAME'");
  op.name = scalar(node["op"], "op");
  op.pos = pos_of(node["op"]);
  YAML::Node tests, bench;
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "op") continue;
    if (key == "doc") op.doc = scalar(v, "doc");
    else if (key == "args") {
      if (!v.IsMap()) fail(v, "args must be a map from name to type");
      for (const auto& a : v) op.args.push_back(parse_arg(a.first.Scalar(), a.second));
    } else if (key == "outputs") {
      if (!v.IsMap()) fail(v, "outputs must be a map from name to {shape: RULE}");
      for (const auto& o : v) op.outputs.push_back(parse_output(o.first.Scalar(), o.second));
    } else if (key == "dtype") op.dtype_rule = scalar(v, "dtype");
    else if (key == "view") op.view = scalar(v, "view");
    else if (key == "kernels") {
      if (!v.IsMap()) fail(v, "kernels must map a backend to its dtypes");
      for (const auto& k : v) {
        std::string b = k.first.Scalar();
        if (!kBackends.count(b)) fail(k.first, fmt::format("unknown backend '{}': expected reference, onednn or cuda", b));
        op.kernels[b] = expand_dtypes(k.second);
      }
      // Optional backends may be left out of a build; the reference kernel is what remains.
      if (!op.kernels.count("reference"))
        fail(v, fmt::format("op '{}' has no reference kernel: every op needs one (other backends are optional builds)", op.name));
    } else if (key == "nondiff") op.nondiff = name_list(v);
    else if (key == "mutates") op.mutates = name_list(v);
    else if (key == "aliases") op.aliases = name_list(v);
    else if (key == "random") op.random = v.as<bool>();
    else if (key == "scalar") op.scalar = scalar(v, "scalar");
    else if (key == "activation") op.activation = v.as<bool>();
    else if (key == "backward") op.backward = parse_formulas(v);
    else if (key == "fused_backward") op.fused_backward = parse_formulas(v);
    else if (key == "tests") tests = v;
    else if (key == "bench") bench = v;
    else fail(kv.first, fmt::format("unknown key '{}' in op '{}': expected doc, args, outputs, dtype, view, kernels, "
                                    "nondiff, mutates, aliases, random, scalar, activation, backward, fused_backward, tests, bench",
                                    key, op.name));
  }
  if (op.outputs.empty()) fail(node, fmt::format("op '{}' declares no outputs", op.name));
  if (op.view.empty() && op.kernels.empty()) fail(node, fmt::format("op '{}' has neither kernels nor a view function", op.name));
  for (const auto& n : op.nondiff)
    if (!op.arg(n)) fail(node["nondiff"], fmt::format("nondiff names unknown input '{}'", n));
  // An in-place output is its input, updated by the kernel (Paddle's `inplace: (param -> param_out)`):
  // that input is mutated, and the output has its shape unless a rule says otherwise.
  for (auto& o : op.outputs) {
    if (o.inplace.empty()) continue;
    const ArgDef* a = op.arg(o.inplace);
    if (!a || a->kind != ArgKind::Tensor)
      fail(node["outputs"], fmt::format("output '{}' is inplace of '{}', which is not a Tensor input", o.name, o.inplace));
    if (std::find(op.mutates.begin(), op.mutates.end(), o.inplace) == op.mutates.end()) op.mutates.push_back(o.inplace);
    if (std::find(op.nondiff.begin(), op.nondiff.end(), o.inplace) == op.nondiff.end()) op.nondiff.push_back(o.inplace);
    if (o.infer.empty()) o.infer = "same_as(" + o.inplace + ")";
  }
  for (const auto& n : op.mutates)
    if (!op.arg(n)) fail(node["mutates"], fmt::format("mutates names unknown input '{}'", n));
  std::set<std::string> names;
  bool seen_default = false;
  for (const auto& a : op.args) {
    if (!names.insert(a.name).second) fail(node["args"], fmt::format("duplicate argument '{}'", a.name));
    // Names the generated op API uses for its own locals.
    static const std::set<std::string> reserved = {"kernel", "run_kernel", "place", "kdt", "kOp", "node", "observed", "output_nr"};
    if (reserved.count(a.name)) fail(node["args"], fmt::format("argument name '{}' is reserved by the generated code", a.name));
    if (a.default_cpp) seen_default = true;
    else if (seen_default) fail(node["args"], fmt::format("argument '{}' has no default but follows one that has", a.name));
  }
  for (const auto& o : op.outputs)
    if (!names.insert(o.name).second) fail(node["outputs"], fmt::format("output '{}' repeats an argument name", o.name));
  // A scalar formula makes the op available to fused_elementwise: one or two tensors, float attributes.
  if (!op.scalar.empty()) {
    const size_t tensors = op.tensor_args().size();
    if (tensors < 1 || tensors > 2 || op.args.size() - tensors > 2)
      fail(node["scalar"], fmt::format("op '{}' has a scalar formula but is not elementwise over 1 or 2 tensors with at most 2 attributes", op.name));
    for (const ArgDef* a : op.attr_args())
      if (a->kind != ArgKind::Float) fail(node["scalar"], fmt::format("scalar formula of '{}': attribute '{}' must be a float", op.name, a->name));
  }
  if (op.activation && (op.scalar.empty() || op.tensor_args().size() != 1 || op.attr_args().size() > 1))
    fail(node["activation"], fmt::format("activation '{}' needs a scalar formula, one tensor and at most one float attribute", op.name));
  if (op.random && (!op.arg("seed") || op.arg("seed")->kind != ArgKind::Int))
    fail(node["random"], "a random op needs an attribute 'seed: int = -1'");
  if (!tests) fail(node, fmt::format("op '{}' has no tests entry", op.name));
  parse_tests(op, tests);
  if (bench) {
    for (const auto& kv : bench) {
      std::string key = kv.first.Scalar();
      if (key == "problems") for (const auto& s : kv.second) op.bench.problems.push_back(parse_sample(op, s, false));
      else if (key == "flops") op.bench.flops = scalar(kv.second, "flops");
      else fail(kv.first, fmt::format("unknown key '{}' in bench: expected problems, flops", key));
    }
  }
  return op;
}

}  // namespace

const ArgDef* OpDef::arg(const std::string& n) const {
  for (const auto& a : args)
    if (a.name == n) return &a;
  return nullptr;
}
const OutputDef* OpDef::output(const std::string& n) const {
  for (const auto& o : outputs)
    if (o.name == n) return &o;
  return nullptr;
}
std::vector<const ArgDef*> OpDef::tensor_args() const {
  std::vector<const ArgDef*> out;
  for (const auto& a : args)
    if (a.is_tensor()) out.push_back(&a);
  return out;
}
std::vector<const ArgDef*> OpDef::attr_args() const {
  std::vector<const ArgDef*> out;
  for (const auto& a : args)
    if (!a.is_tensor()) out.push_back(&a);
  return out;
}
std::vector<const ArgDef*> OpDef::diff_inputs() const {
  std::vector<const ArgDef*> out;
  for (const ArgDef* a : tensor_args()) {
    bool nd = std::find(nondiff.begin(), nondiff.end(), a->name) != nondiff.end();
    if (!nd && (a->dtype_class.empty() || a->dtype_class == "any")) out.push_back(a);
  }
  return out;
}
const OpDef* OpSet::find(const std::string& name) const {
  for (const auto& o : ops)
    if (o.name == name) return &o;
  return nullptr;
}

namespace {

OpSet parse_root(const YAML::Node& root) {
  OpSet set;
  std::map<std::string, Pos> seen;
  if (!root.IsMap()) fail(root, "ops.yaml must be a map from category name to a list of ops");
  for (const auto& cat : root) {
    if (!cat.second.IsSequence()) fail(cat.second, fmt::format("category '{}' must be a list of ops", cat.first.Scalar()));
    for (const auto& node : cat.second) {
      OpDef op = parse_op(node, cat.first.Scalar());
      if (auto it = seen.find(op.name); it != seen.end())
        fail(node["op"], fmt::format("duplicate op '{}' (first defined at line {})", op.name, it->second.line));
      seen[op.name] = op.pos;
      set.ops.push_back(std::move(op));
    }
  }
  validate_formulas(set, g_file);
  return set;
}

}  // namespace

OpSet load_ops(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CodegenError(fmt::format("{}: cannot open the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_ops(text.str(), path);
}

OpSet parse_ops(const std::string& text, const std::string& file) {
  g_file = file;
  try {
    return parse_root(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    // A value of the wrong kind (`twice_differentiable: 3`, a shape of strings) is found by yaml-cpp's
    // conversions; its exception carries the node's position.
    if (e.mark.is_null()) throw CodegenError(fmt::format("{}: {}", file, e.msg));
    fail(e.mark, e.msg);
  }
}

}  // namespace pd::codegen
