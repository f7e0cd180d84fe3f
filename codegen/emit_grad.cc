// grad_nodes.{h,cc}: one GradNode per differentiable op. apply() evaluates the backward formulas
// from ops.yaml with the generated op API, so gradients are themselves recorded (and differentiable)
// when the engine runs with create_graph.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "emitters.h"
#include "formula.h"
#include "writer.h"

namespace pd::codegen {

std::string grad_node_class(const OpDef& op) {
  std::string n;
  bool up = true;
  for (char ch : op.name) {
    if (ch == '_') {
      up = true;
      continue;
    }
    n += up ? static_cast<char>(toupper(ch)) : ch;
    up = false;
  }
  return n + "Grad";
}

namespace {

bool is_broadcast_op(const OpDef& op) { return op.outputs[0].infer.rfind("broadcast(", 0) == 0; }

std::string members(const OpDef& op) {
  std::string m;
  std::set<std::string> used;
  for (const auto* list : {&op.backward, &op.fused_backward})
    for (const auto& f : *list) collect_value_names(parse_formula(f), used);
  for (const ArgDef* a : op.tensor_args()) {
    if (a->kind == ArgKind::TensorList) {
      m += fmt::format("  std::vector<::pd::Shape> {}_shapes;\n  size_t {}_count = 0;\n", a->name, a->name);
      continue;
    }
    m += fmt::format("  ::pd::Shape {}_shape;\n  ::pd::DType {}_dtype = ::pd::DType::f32;\n", a->name, a->name);
    if (used.count(a->name)) m += fmt::format("  ::pd::SavedTensor {}_saved;\n", a->name);
  }
  for (const ArgDef* a : op.attr_args()) m += fmt::format("  {} {}{{}};\n", cpp_value_type(*a), a->name);
  for (const auto& o : op.outputs) {
    if (o.is_list) {
      m += fmt::format("  std::vector<::pd::Shape> {}_shapes;\n  ::pd::DType {}_dtype = ::pd::DType::f32;\n", o.name, o.name);
      continue;
    }
    m += fmt::format("  ::pd::Shape {}_shape;\n  ::pd::DType {}_dtype = ::pd::DType::f32;\n", o.name, o.name);
    if (used.count(o.name)) m += fmt::format("  ::pd::SavedTensor {}_saved;\n", o.name);
  }
  return m;
}

std::string apply_body(const OpDef& op, const OpSet& set) {
  std::string b = "  auto self = shared_from_this();\n  size_t gi = 0;\n";
  std::set<std::string> used;
  for (const auto* list : {&op.backward, &op.fused_backward})
    for (const auto& f : *list) collect_value_names(parse_formula(f), used);
  const OutputDef* first_diff = nullptr;
  for (const auto& o : op.outputs) {
    if (o.is_list) {
      b += fmt::format("  std::vector<::pd::Tensor> grad_{0};\n  for (size_t k = 0; k < {0}_shapes.size(); ++k)\n"
                       "    grad_{0}.push_back(::pd::detail::grad_or_zeros(grads[gi + k], {0}_shapes[k], {0}_dtype, place));\n"
                       "  gi += {0}_shapes.size();\n", o.name);
    } else if (o.differentiable) {
      b += fmt::format("  const ::pd::Tensor grad_{0} = ::pd::detail::grad_or_zeros(grads[gi++], {0}_shape, {0}_dtype, place);\n", o.name);
    } else {
      b += "  ++gi;\n";
    }
    if (o.differentiable && !first_diff) first_diff = &o;
  }
  b += fmt::format("  const auto& grad = grad_{};\n  (void)grad;\n", first_diff->name);
  b += fmt::format("  const ::pd::DType grad_dtype = {}_dtype;\n  (void)grad_dtype;\n", first_diff->name);
  b += "  const ::pd::Place grad_place = place;\n  (void)grad_place;\n";
  for (const ArgDef* a : op.tensor_args())
    if (a->kind != ArgKind::TensorList && used.count(a->name))
      b += fmt::format("  const ::pd::Tensor {0} = {0}_saved.unpack(self);\n", a->name);
  for (const auto& o : op.outputs)
    if (!o.is_list && used.count(o.name)) b += fmt::format("  const ::pd::Tensor {0} = {0}_saved.unpack(self);\n", o.name);
  b += "  std::vector<::pd::Tensor> result(next_edges.size());\n  size_t slot = 0;\n";
  for (const ArgDef* a : op.diff_inputs()) {
    if (a->kind == ArgKind::TensorList)
      b += fmt::format("  const size_t slot_{0} = slot;\n  slot += {0}_count;\n", a->name);
    else
      b += fmt::format("  const size_t slot_{0} = slot++;\n", a->name);
  }
  b += "  (void)slot;\n  const bool fused = !::pd::creating_graph() && ::pd::use_fused_grad_kernels();\n  (void)fused;\n";
  auto fused_for = [&](const std::string& target) -> const Formula* {
    for (const auto& f : op.fused_backward)
      if (f.targets.size() == 1 && f.targets[0] == target) return &f;
    return nullptr;
  };
  for (const auto& f : op.backward) {
    std::string expr = emit_expr(parse_formula(f), op, set, Slot::Tensor);
    if (f.targets.size() == 1) {
      const ArgDef* a = op.arg(f.targets[0]);
      if (a->kind == ArgKind::TensorList) {
        b += fmt::format("  {{\n    bool need = false;\n    for (size_t k = 0; k < {0}_count; ++k) need |= needs_input_grad(slot_{0} + k);\n"
                         "    if (need) {{\n      auto r = {1};\n      for (size_t k = 0; k < {0}_count; ++k) result[slot_{0} + k] = r[k];\n    }}\n  }}\n",
                         a->name, expr);
        continue;
      }
      if (const Formula* ff = fused_for(a->name))
        expr = fmt::format("(fused ? {} : {})", emit_expr(parse_formula(*ff), op, set, Slot::Tensor), expr);
      if (is_broadcast_op(op)) expr = fmt::format("::pd::detail::sum_to_if_needed({}, {}_shape)", expr, a->name);
      b += fmt::format("  if (needs_input_grad(slot_{0})) result[slot_{0}] = {1};\n", a->name, expr);
      continue;
    }
    std::vector<std::string> needs, assigns;
    for (size_t k = 0; k < f.targets.size(); ++k) {
      needs.push_back(fmt::format("needs_input_grad(slot_{})", f.targets[k]));
      assigns.push_back(fmt::format("    if (needs_input_grad(slot_{0})) result[slot_{0}] = std::get<{1}>(r);\n", f.targets[k], k));
    }
    b += fmt::format("  if ({}) {{\n    auto r = {};\n{}  }}\n", fmt::join(needs, " || "), expr, fmt::join(assigns, ""));
  }
  b += "  return result;\n";
  return b;
}

}  // namespace

void emit_grad_nodes(const OpSet& set, const std::string& dir) {
  std::string h = kHeader;
  h += "#pragma once\n#include <string>\n#include <vector>\n\n#include \"pd/autograd/grad_node.h\"\n\nnamespace pd::grad_nodes {\n\n";
  std::string c = kHeader;
  c += "#include \"grad_nodes.h\"\n\n#include \"op_api.h\"\n#include \"pd/autograd/autograd.h\"\n#include \"pd/ops/op_support.h\"\n\n"
       "namespace pd::grad_nodes {\n\n";
  for (const auto& op : set.ops) {
    if (!op.differentiable()) continue;
    std::string cls = grad_node_class(op);
    h += fmt::format("class {0} final : public ::pd::GradNode {{\n public:\n  std::vector<::pd::Tensor> apply(std::vector<::pd::Tensor>&& grads) override;\n"
                     "  std::string name() const override {{ return \"{0}\"; }}\n{1}}};\n\n",
                     cls, members(op));
    c += fmt::format("std::vector<::pd::Tensor> {}::apply(std::vector<::pd::Tensor>&& grads) {{\n{}}}\n\n", cls, apply_body(op, set));
  }
  h += "}  // namespace pd::grad_nodes\n";
  c += "}  // namespace pd::grad_nodes\n";
  write_if_changed(dir + "/grad_nodes.h", h);
  write_if_changed(dir + "/grad_nodes.cc", c);
}

}  // namespace pd::codegen
