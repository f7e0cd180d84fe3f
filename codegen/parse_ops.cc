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
#include "parse_helpers.h"

namespace pd::codegen {
namespace {

const std::set<std::string> kBackends = {"reference", "onednn", "cuda"};

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
  validate_formulas(set, parse_file());
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
  set_parse_file(file);
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