// op_api.{h,cc}: pd::ops::NAME(...) = check inputs, settle the dtype, infer output shapes, pick the
// kernel, run it, and record the GradNode when a gradient is needed.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "emitters.h"
#include "formula.h"
#include "writer.h"

namespace pd::codegen {
namespace {

std::string api_params(const OpDef& op, bool with_defaults) {
  std::vector<std::string> ps;
  for (const auto& a : op.args) {
    std::string p = cpp_param_type(a) + " " + a.name;
    if (with_defaults && a.default_cpp) p += " = " + *a.default_cpp;
    ps.push_back(p);
  }
  return fmt::format("{}", fmt::join(ps, ", "));
}

}  // namespace

// Emits a shape-rule or view call: tensors become In{"name", local}, attrs pass through.
std::string emit_rule_call(const Expr& e, const OpDef& op, const std::string& ns) {
  if (e.kind == Expr::Ident) {
    const ArgDef* a = op.arg(e.text);
    if (a && a->kind == ArgKind::TensorList) return fmt::format("::pd::InList{{\"{}\", {}_}}", a->name, a->name);
    if (a && a->is_tensor()) return fmt::format("::pd::In{{\"{}\", {}_}}", a->name, a->name);
    return e.text;
  }
  if (e.kind == Expr::Number || e.kind == Expr::Bool) return e.text;
  if (e.kind == Expr::List) {
    std::vector<std::string> items;
    for (const auto& x : e.args) items.push_back(emit_rule_call(x, op, ns));
    return fmt::format("std::vector<int64_t>{{{}}}", fmt::join(items, ", "));
  }
  std::vector<std::string> args = {"kOp"};
  for (const auto& a : e.args) args.push_back(emit_rule_call(a, op, ns));
  return fmt::format("::pd::{}::{}({})", ns, e.text, fmt::join(args, ", "));
}

namespace {

std::vector<std::string> split_args(const std::string& call, std::string& fname) {
  size_t lp = call.find('('), rp = call.rfind(')');
  fname = call.substr(0, lp);
  std::vector<std::string> out;
  std::string body = call.substr(lp + 1, rp - lp - 1);
  size_t start = 0;
  while (!body.empty()) {
    size_t c = body.find(',', start);
    std::string item = body.substr(start, c == std::string::npos ? std::string::npos : c - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    out.push_back(item);
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return out;
}

}  // namespace

// Argument checks, the kernel dtype `kdt`, and the locals `NAME_` the rest of the op uses (inputs cast
// to kdt under a promote rule). `cast_fn` is cast_if_needed for real tensors, meta_cast for shape-only ones.
std::string emit_prologue(const OpDef& op, const char* cast_fn) {
  std::string b;
  auto tensors = op.tensor_args();
  for (const ArgDef* a : tensors) {
    const char* check = a->kind == ArgKind::TensorList ? "check_tensor_list"
                        : a->kind == ArgKind::OptionalTensor ? "check_optional_tensor" : "check_tensor";
    b += fmt::format("  ::pd::detail::{}(kOp, \"{}\", {});\n", check, a->name, a->name);
  }
  // dtype rule
  std::string rule_fn;
  std::vector<std::string> rule_args;
  if (!op.dtype_rule.empty()) rule_args = split_args(op.dtype_rule, rule_fn);
  std::set<std::string> promoted;
  if (rule_fn == "promote") {
    std::vector<std::string> ptrs;
    for (auto& n : rule_args) ptrs.push_back("&" + n);
    b += fmt::format("  [[maybe_unused]] const ::pd::DType kdt = ::pd::promote_types({{{}}});\n", fmt::join(ptrs, ", "));
    promoted.insert(rule_args.begin(), rule_args.end());
  } else if (rule_fn == "attr") {
    b += fmt::format("  [[maybe_unused]] const ::pd::DType kdt = {};\n", rule_args.at(0));
  } else if (rule_fn == "same") {
    b += fmt::format("  [[maybe_unused]] const ::pd::DType kdt = {}.dtype();\n", rule_args.at(0));
  } else if (!tensors.empty()) {
    const ArgDef* first = tensors[0];
    b += first->kind == ArgKind::TensorList
             ? fmt::format("  [[maybe_unused]] const ::pd::DType kdt = ::pd::detail::list_dtype(kOp, \"{}\", {});\n", first->name, first->name)
             : fmt::format("  [[maybe_unused]] const ::pd::DType kdt = {}.dtype();\n", first->name);
  } else {
    b += "  [[maybe_unused]] const ::pd::DType kdt = ::pd::DType::f32;\n";
  }
  std::string dtype_ref = rule_fn == "same" ? rule_args.at(0) : tensors.empty() ? "" : tensors[0]->name;
  for (const ArgDef* a : tensors) {
    if (promoted.count(a->name)) {
      b += fmt::format("  const ::pd::Tensor {0}_ = ::pd::detail::{1}({0}, kdt);\n", a->name, cast_fn);
      continue;
    }
    b += fmt::format("  [[maybe_unused]] const {}& {}_ = {};\n", cpp_value_type(*a), a->name, a->name);  // no copy of the handle
    if (a->dtype_class.empty())
      b += fmt::format("  ::pd::detail::check_dtype(kOp, \"{}\", {}_, kdt, \"{}\");\n", a->name, a->name, dtype_ref);
    else if (a->dtype_class != "any")
      b += fmt::format("  ::pd::detail::check_dtype_class(kOp, \"{}\", {}_, \"{}\");\n", a->name, a->name, a->dtype_class);
  }
  b += tensors.empty() ? "  const ::pd::Place place = ::pd::default_place();\n"
                       : fmt::format("  const ::pd::Place place = ::pd::detail::place_of({}_);\n", tensors[0]->name);
  // Every input on the first one's place: kernels of one backend read all of them.
  if (std::string(cast_fn) == "cast_if_needed" && !tensors.empty())
    for (size_t i = tensors[0]->kind == ArgKind::TensorList ? 0 : 1; i < tensors.size(); ++i)
      b += fmt::format("  ::pd::detail::check_place(kOp, \"{}\", {}_, place, \"{}\");\n", tensors[i]->name, tensors[i]->name,
                       tensors[0]->name);
  b += "  (void)place;\n";
  for (const ArgDef* a : op.attr_args())
    if (a->enum_of == "activation") b += fmt::format("  ::pd::parse_activation(kOp, {});\n", a->name);
  return b;
}

// The output tensors of a kernel op, allocated with their inferred shapes and dtypes.
std::string emit_outputs(const OpDef& op, const char* alloc) {
  std::string b;
  for (const auto& o : op.outputs) {
    std::string dt = o.dtype.empty() ? "kdt" : o.dtype.rfind("attr:", 0) == 0 ? o.dtype.substr(5) : dtype_enum(o.dtype);
    std::string rule = emit_rule_call(parse_formula(Formula{{}, o.infer, o.pos}), op, "infer");
    // The kernel writes an in-place output into its input (checked contiguous and not tracked by
    // autograd); the rule still runs for its checks.
    if (!o.inplace.empty() && std::string(alloc) == "Tensor::empty") {
      b += fmt::format("  static_cast<void>({0});\n  ::pd::Tensor {1} = ::pd::detail::require_contiguous(kOp, \"{2}\", {2}_);\n",
                       rule, o.name, o.inplace);
      continue;
    }
    if (o.is_list)
      b += fmt::format("  std::vector<::pd::Tensor> {0};\n  for (const ::pd::Shape& s : {1}) {0}.push_back(::pd::{3}(s, {2}, place));\n",
                       o.name, rule, dt, alloc);
    else
      b += fmt::format("  ::pd::Tensor {} = ::pd::{}({}, {}, place);\n", o.name, alloc, rule, dt);
  }
  return b;
}

namespace {

// Ops with kernels get their body in bound::NAME(call, ...), which runs call.kernel (bound once by an
// ExecPlan) or, when it is null, the one the registry picks, with the executor's memo slot for the op;
// NAME(...) forwards with neither.
std::string bound_params(const OpDef& op) {
  const std::string rest = api_params(op, false);
  return rest.empty() ? "const ::pd::BoundCall& call" : "const ::pd::BoundCall& call, " + rest;
}

// Under autocast (pd/ops/amp.h) an op whose inputs need another dtype calls itself again with them
// cast. Not for views (no dtype of their own) or cast itself; tensors an op updates in place (e.g.
// batch_norm's running statistics) are passed on as they are.
std::string emit_autocast(const OpDef& op) {
  if (!op.view.empty() || op.name == "cast") return "";
  const auto mutated = [&](const std::string& name) {
    return std::find(op.mutates.begin(), op.mutates.end(), name) != op.mutates.end();
  };
  std::vector<std::string> singles, lists, call;
  for (const ArgDef* a : op.tensor_args())
    if (!mutated(a->name)) (a->kind == ArgKind::TensorList ? lists : singles).push_back("&" + a->name);
  if (singles.empty() && lists.empty()) return "";
  for (const auto& a : op.args)
    call.push_back(a.is_tensor() && !mutated(a.name) ? fmt::format("::pd::amp::cast({}, *amp_dtype)", a.name) : a.name);
  return fmt::format("  if (::pd::amp::active())\n"
                     "    if (const auto amp_dtype = ::pd::amp::cast_target(kOp, {{{}}}, {{{}}}))\n"
                     "      return ::pd::ops::{}({});\n",
                     fmt::join(singles, ", "), fmt::join(lists, ", "), op.name, fmt::join(call, ", "));
}

std::string emit_function(const OpDef& op, const OpSet& set) {
  std::string b;
  if (op.view.empty()) {
    std::vector<std::string> names = {"::pd::BoundCall{}"};
    for (const auto& a : op.args) names.push_back(a.name);
    b += fmt::format("{0} {1}({2}) {{ return bound::{1}({3}); }}\n\n", cpp_return_type(op), op.name, api_params(op, false),
                     fmt::join(names, ", "));
    b += fmt::format("{} bound::{}({}) {{\n  static constexpr const char* kOp = \"{}\";\n", cpp_return_type(op), op.name,
                     bound_params(op), op.name);
  } else {
    b += fmt::format("{} {}({}) {{\n  static constexpr const char* kOp = \"{}\";\n", cpp_return_type(op), op.name,
                     api_params(op, false), op.name);
  }
  auto tensors = op.tensor_args();
  b += emit_autocast(op);
  b += "  const ::pd::OpObserverScope observed(kOp);\n";
  b += emit_prologue(op, "cast_if_needed");
  if (op.random) b += "  if (seed < 0) seed = static_cast<int64_t>(::pd::next_seed());\n";

  if (!op.view.empty()) {
    b += fmt::format("  ::pd::Tensor {} = {};\n", op.outputs[0].name,
                     emit_rule_call(parse_formula(Formula{{}, op.view, op.pos}), op, "views"));
  } else {
    b += emit_outputs(op, "Tensor::empty");
    std::vector<std::string> kargs;
    for (const auto& a : op.args) {
      bool mut = std::find(op.mutates.begin(), op.mutates.end(), a.name) != op.mutates.end();
      if (!a.is_tensor()) kargs.push_back(a.name);
      else if (mut) kargs.push_back(fmt::format("::pd::detail::require_contiguous(kOp, \"{0}\", {0}_)", a.name));
      else if (a.kind == ArgKind::TensorList) kargs.push_back(fmt::format("::pd::detail::contiguous_list({}_)", a.name));
      else {
        b += fmt::format("  ::pd::Tensor {}_dense;\n", a.name);
        kargs.push_back(fmt::format("::pd::detail::contiguous_or_empty({0}_, {0}_dense)", a.name));
      }
    }
    for (const auto& o : op.outputs) kargs.push_back(o.name);
    b += fmt::format("  const ::pd::registry::{0}_fn run_kernel = call.kernel ? reinterpret_cast<::pd::registry::{0}_fn>(call.kernel) "
                     ": ::pd::registry::find_{0}(kdt, place);\n",
                     op.name);
    b += fmt::format("  run_kernel(::pd::detail::kernel_context(place, call.memo), {});\n", fmt::join(kargs, ", "));
  }

  if (op.differentiable()) {
    std::vector<std::string> ptrs;
    std::string list_check;
    for (const ArgDef* a : op.diff_inputs()) {
      if (a->kind == ArgKind::TensorList) list_check += fmt::format(" || ::pd::any_requires_grad({}_)", a->name);
      else ptrs.push_back(fmt::format("&{}_", a->name));
    }
    b += fmt::format("  if (::pd::GradMode::enabled() && (::pd::any_requires_grad({{{}}}){})) {{\n", fmt::join(ptrs, ", "),
                     list_check);
    b += fmt::format("    auto node = std::make_shared<::pd::grad_nodes::{}>();\n    node->place = place;\n", grad_node_class(op));
    for (const ArgDef* a : op.diff_inputs()) {
      if (a->kind == ArgKind::TensorList)
        b += fmt::format("    for (const auto& t : {0}_) node->next_edges.push_back(::pd::gradient_edge(t));\n"
                         "    node->{0}_count = {0}_.size();\n", a->name);
      else
        b += fmt::format("    node->next_edges.push_back(::pd::gradient_edge({}_));\n", a->name);
    }
    std::set<std::string> used;
    for (const auto* list : {&op.backward, &op.fused_backward})
      for (const auto& f : *list) collect_value_names(parse_formula(f), used);
    for (const ArgDef* a : tensors) {
      if (a->kind == ArgKind::TensorList) {
        b += fmt::format("    for (const auto& t : {0}_) node->{0}_shapes.push_back(t.shape());\n", a->name);
        continue;
      }
      b += fmt::format("    if ({0}_.defined()) {{ node->{0}_shape = {0}_.shape(); node->{0}_dtype = {0}_.dtype(); }}\n", a->name);
      if (used.count(a->name)) b += fmt::format("    node->{0}_saved = ::pd::SavedTensor({0}_, false);\n", a->name);
    }
    for (const ArgDef* a : op.attr_args()) b += fmt::format("    node->{0} = {0};\n", a->name);
    b += "    int output_nr = 0;\n";
    for (const auto& o : op.outputs) {
      if (o.is_list) {
        b += fmt::format("    for (auto& t : {0}) {{\n      node->{0}_shapes.push_back(t.shape());\n"
                         "      node->{0}_dtype = t.dtype();\n      ::pd::set_history(t, node, output_nr++);\n    }}\n", o.name);
        continue;
      }
      b += fmt::format("    node->{0}_shape = {0}.shape();\n    node->{0}_dtype = {0}.dtype();\n", o.name);
      if (o.differentiable) b += fmt::format("    ::pd::set_history({}, node, output_nr);\n", o.name);
      if (used.count(o.name)) b += fmt::format("    node->{0}_saved = ::pd::SavedTensor({0}, true, output_nr);\n", o.name);
      b += "    ++output_nr;\n";
    }
    b += "    node->num_outputs = output_nr;\n  }\n";
  }
  // Observers that want values (tracing) see the inputs as passed, every attribute and the outputs.
  std::vector<std::string> ins, attrs, outs;
  for (const ArgDef* a : tensors)
    ins.push_back(a->kind == ArgKind::TensorList ? a->name
                  : a->kind == ArgKind::OptionalTensor ? fmt::format("::pd::detail::optional_slot({})", a->name)
                                                       : fmt::format("{{{}}}", a->name));
  for (const ArgDef* a : op.attr_args()) attrs.push_back(fmt::format("{{\"{0}\", ::pd::AttrValue({0})}}", a->name));
  for (const auto& o : op.outputs) outs.push_back(o.name);
  b += fmt::format("  if (observed.wants_values())\n    observed.observer->record(kOp, {{{}}}, {{{}}}, ::pd::detail::meta_free_outputs({}));\n",
                   fmt::join(ins, ", "), fmt::join(attrs, ", "), fmt::join(outs, ", "));
  if (op.outputs.size() == 1) {
    b += fmt::format("  return {};\n}}\n\n", op.outputs[0].name);
  } else {
    b += fmt::format("  return {{{}}};\n}}\n\n", fmt::join(outs, ", "));
  }
  return b;
}

}  // namespace

void emit_api(const OpSet& set, const std::string& dir) {
  std::string h = kHeader;
  h += "// The operator API: one function per op in ops.yaml (see docs/ops.md).\n#pragma once\n"
       "#include <cstdint>\n#include <string>\n#include <tuple>\n#include <vector>\n\n#include \"pd/core/kernel_context.h\"\n#include \"pd/core/tensor.h\"\n\n"
       "namespace pd::ops {\n\n";
  std::string c = kHeader;
  c += "#include \"op_api.h\"\n\n#include \"elementwise_ops.h\"\n#include \"grad_nodes.h\"\n#include \"registry.h\"\n#include \"pd/autograd/autograd.h\"\n"
       "#include \"pd/ops/amp.h\"\n#include \"pd/ops/op_observer.h\"\n#include \"pd/ops/op_support.h\"\n#include \"pd/ops/shape_rules.h\"\n"
       "#include \"pd/ops/views.h\"\n\nnamespace pd::ops {\n\n";
  for (const auto& op : set.ops) {
    if (!op.doc.empty()) h += fmt::format("// {}\n", op.doc);
    h += fmt::format("{} {}({});\n", cpp_return_type(op), op.name, api_params(op, true));
    for (const auto& alias : op.aliases) {
      std::vector<std::string> names;
      for (const auto& a : op.args) names.push_back(a.name);
      h += fmt::format("// Alias of {}.\ninline {} {}({}) {{ return {}({}); }}\n", op.name, cpp_return_type(op), alias,
                       api_params(op, true), op.name, fmt::join(names, ", "));
    }
    h += "\n";
    c += emit_function(op, set);
  }
  h += "// The ops with kernels again, running `kernel` when it is not null (pd::exec::ExecPlan binds one per\n"
       "// op when it compiles a program) instead of the one the registry would pick on each call.\nnamespace bound {\n";
  for (const auto& op : set.ops)
    if (op.view.empty()) h += fmt::format("{} {}({});\n", cpp_return_type(op), op.name, bound_params(op));
  h += "}  // namespace bound\n\n";
  h += "}  // namespace pd::ops\n";
  c += "}  // namespace pd::ops\n";
  write_if_changed(dir + "/op_api.h", h);
  write_if_changed(dir + "/op_api.cc", c);
}

}  // namespace pd::codegen
