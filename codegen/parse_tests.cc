// ops.yaml: an op's `tests` section (reference, samples, bad samples, domains, tolerances).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "parse_helpers.h"

namespace pd::codegen {
namespace {

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

}  // namespace

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
    if (key == "gradcheck") {
      if (bad) fail(kv.first, "'gradcheck' is only allowed in samples, not 'bad' ones");
      s.gradcheck = kv.second.as<bool>();
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

}  // namespace pd::codegen
