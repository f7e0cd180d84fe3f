// op_schema.cc: the runtime op table (names, args, attrs, defaults) and a boxed call per op, used by
// the test harness now and by the IR, model files, ONNX export and pd-bench later.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "emitters.h"
#include "formula.h"
#include "writer.h"

namespace pd::codegen {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// The boxed slots of `op` as pd::ops::NAME takes them; attributes come from `attr(arg)`.
template <typename AttrFn>
std::vector<std::string> boxed_args(const OpDef& op, AttrFn attr) {
  std::vector<std::string> args;
  size_t ti = 0;
  for (const auto& a : op.args) {
    if (a.kind == ArgKind::Tensor) args.push_back(fmt::format("::pd::detail::boxed_tensor(kOp, \"{}\", in[{}])", a.name, ti++));
    else if (a.kind == ArgKind::OptionalTensor) args.push_back(fmt::format("::pd::detail::boxed_optional(in[{}])", ti++));
    else if (a.kind == ArgKind::TensorList) args.push_back(fmt::format("in[{}]", ti++));
    else args.push_back(attr(a));
  }
  return args;
}

std::string read_attr(const ArgDef& a) {
  return a.default_cpp ? fmt::format("::pd::detail::attr_or<{}>(kOp, attrs, \"{}\", {})", cpp_value_type(a), a.name, *a.default_cpp)
                       : fmt::format("::pd::detail::attr_required<{}>(kOp, attrs, \"{}\")", cpp_value_type(a), a.name);
}

std::vector<std::string> arg_names(const OpDef& op) {
  std::vector<std::string> names;
  for (const auto& a : op.args) names.push_back(quote(a.name));
  return names;
}

// boxed_NAME: pd::ops::NAME on boxed inputs, its attributes read from the map on each call.
std::string boxed_fn(const OpDef& op) {
  const size_t n_tensors = op.tensor_args().size();
  return fmt::format(
      "std::vector<::pd::Tensor> boxed_{0}(const ::pd::BoxedInputs& in, const ::pd::AttrMap& attrs) {{\n"
      "  static constexpr const char* kOp = \"{0}\";\n"
      "  ::pd::detail::check_boxed_call(kOp, in, {1}, attrs, {{{2}}});\n"
      "  return ::pd::detail::flatten_outputs(::pd::ops::{0}({3}));\n}}\n\n",
      op.name, n_tensors, fmt::join(arg_names(op), ", "), fmt::join(boxed_args(op, read_attr), ", "));
}

// attrs_NAME holds the op's attributes parsed once (prepare_NAME, which also checks their names);
// prepared_NAME calls pd::ops::bound::NAME with them, a bound kernel (null: the registry's pick) and
// the op's memo slot (a view: pd::ops::NAME, which runs no kernel).
// The executor prepares every op once per program, so a run does no map lookups or vector copies.
std::string prepared_fns(const OpDef& op) {
  std::string fields, parsed;
  for (const auto& a : op.args) {
    if (a.kind == ArgKind::Tensor || a.kind == ArgKind::OptionalTensor || a.kind == ArgKind::TensorList) continue;
    fields += fmt::format("  {} {};\n", cpp_value_type(a), a.name);
    parsed += fmt::format("  a->{} = {};\n", a.name, read_attr(a));
  }
  const size_t n_tensors = op.tensor_args().size();
  // Views have no kernel: pd::ops::NAME itself.
  const bool view = !op.view.empty();
  std::vector<std::string> call;
  if (!view) call.push_back("call");
  for (auto& arg : boxed_args(op, [](const ArgDef& a) { return "a." + a.name; })) call.push_back(arg);
  return fmt::format(
      "struct attrs_{0} {{\n{1}}};\n\n"
      "::pd::PreparedAttrs prepare_{0}(const ::pd::AttrMap& attrs) {{\n"
      "  static constexpr const char* kOp = \"{0}\";\n"
      "  ::pd::detail::check_attr_names(kOp, attrs, {{{2}}});\n"
      "  auto a = std::make_shared<attrs_{0}>();\n{3}"
      "  return a;\n}}\n\n"
      "std::vector<::pd::Tensor> prepared_{0}([[maybe_unused]] const ::pd::BoundCall& call, const ::pd::BoxedInputs& in, "
      "const void* prepared) {{\n"
      "  static constexpr const char* kOp = \"{0}\";\n"
      "  ::pd::detail::check_boxed_slots(kOp, in, {4});\n"
      "  [[maybe_unused]] const attrs_{0}& a = *static_cast<const attrs_{0}*>(prepared);\n"
      "  return ::pd::detail::flatten_outputs(::pd::ops::{6}{0}({5}));\n}}\n\n",
      op.name, fields, fmt::join(arg_names(op), ", "), parsed, n_tensors, fmt::join(call, ", "), view ? "" : "bound::");
}

std::string bench_problem(const OpDef& op, const Sample& s) {
  std::vector<std::string> shapes, dtypes, ranges, attrs;
  for (const ArgDef* a : op.tensor_args()) {
    std::vector<std::string> list;
    double lo = -1, hi = 1;
    if (auto d = op.test.domain.find(a->name); d != op.test.domain.end()) std::tie(lo, hi) = d->second;
    std::string dtype;
    if (auto it = s.inputs.find(a->name); it != s.inputs.end()) {
      for (const auto& sh : it->second.shapes) list.push_back(fmt::format("::pd::Shape{{{}}}", fmt::join(sh, ", ")));
      dtype = it->second.dtype;
      if (it->second.has_range) std::tie(lo, hi) = std::pair(it->second.lo, it->second.hi);
    }
    shapes.push_back(fmt::format("{{{}}}", fmt::join(list, ", ")));
    dtypes.push_back(quote(dtype));
    ranges.push_back(fmt::format("{{{}, {}}}", lo, hi));
  }
  for (const auto& [name, value] : s.attrs_cpp) attrs.push_back(fmt::format("{{\"{}\", {}}}", name, attr_value_cpp(*op.arg(name), value)));
  return fmt::format("{{{{{}}}, {{{}}}, {{{}}}, {{{}}}}}", fmt::join(shapes, ", "), fmt::join(dtypes, ", "), fmt::join(ranges, ", "),
                     fmt::join(attrs, ", "));
}

// `2 * numel(out) * dim(x, -1)` -> C++ over a ShapeEnv.
std::string flops_lambda(const OpDef& op) {
  if (op.bench.flops.empty()) return "nullptr";
  std::string e = op.bench.flops, out;
  for (size_t i = 0; i < e.size();) {
    auto starts = [&](const char* w) { return e.compare(i, strlen(w), w) == 0; };
    if (starts("numel(") || starts("dim(")) {
      bool is_numel = starts("numel(");
      size_t open = e.find('(', i), comma = e.find_first_of(",)", open);
      std::string name = e.substr(open + 1, comma - open - 1);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      out += fmt::format("::pd::bench_{}(e, \"{}\"", is_numel ? "numel" : "dim", name);
      i = comma;
      continue;
    }
    out += e[i++];
  }
  return fmt::format("[](const ::pd::ShapeEnv& e) -> double {{ return {}; }}", out);
}

// meta_NAME: the op's dtype and shape rules run on shape-only tensors (no data, no kernel), for the IR.
// bind_NAME: the same checks, then the kernel the registry picks for the kernel dtype on `target`.
std::string meta_fn(const OpDef& op, bool bind) {
  std::string b = bind ? fmt::format("::pd::AnyKernel bind_{0}(const ::pd::MetaInputs& in, const ::pd::AttrMap& attrs, "
                                     "::pd::Place target) {{\n  static constexpr const char* kOp = \"{0}\";\n",
                                     op.name)
                       : fmt::format("std::vector<::pd::TensorMeta> meta_{0}(const ::pd::MetaInputs& in, const ::pd::AttrMap& "
                                     "attrs) {{\n  static constexpr const char* kOp = \"{0}\";\n",
                                     op.name);
  size_t ti = 0;
  for (const auto& a : op.args) {
    if (a.kind == ArgKind::Tensor) b += fmt::format("  const ::pd::Tensor {} = ::pd::detail::meta_tensor(kOp, \"{}\", in, {});\n", a.name, a.name, ti++);
    else if (a.kind == ArgKind::OptionalTensor) b += fmt::format("  const ::pd::Tensor {} = ::pd::detail::meta_optional(in, {});\n", a.name, ti++);
    else if (a.kind == ArgKind::TensorList) b += fmt::format("  const std::vector<::pd::Tensor> {} = ::pd::detail::meta_list(kOp, \"{}\", in, {});\n", a.name, a.name, ti++);
    else if (a.default_cpp)
      b += fmt::format("  [[maybe_unused]] {0} {1} = ::pd::detail::attr_or<{0}>(kOp, attrs, \"{1}\", {2});\n", cpp_value_type(a), a.name, *a.default_cpp);
    else b += fmt::format("  [[maybe_unused]] {0} {1} = ::pd::detail::attr_required<{0}>(kOp, attrs, \"{1}\");\n", cpp_value_type(a), a.name);
  }
  b += emit_prologue(op, "meta_cast");
  if (bind) {
    std::vector<std::string> names;
    for (const auto& a : op.args) names.push_back(quote(a.name));
    b += fmt::format("  ::pd::detail::check_attr_names(kOp, attrs, {{{}}});\n", fmt::join(names, ", "));
    b += fmt::format("  return reinterpret_cast<::pd::AnyKernel>(::pd::registry::find_{}(kdt, target));\n}}\n\n", op.name);
    return b;
  }
  if (!op.view.empty()) {
    b += fmt::format("  return {{::pd::detail::meta_of({})}};\n}}\n\n", emit_rule_call(parse_formula(Formula{{}, op.view, op.pos}), op, "views"));
    return b;
  }
  b += emit_outputs(op, "detail::shape_only");
  std::vector<std::string> outs;
  for (const auto& o : op.outputs) outs.push_back(o.name);
  b += fmt::format("  return ::pd::detail::meta_of_all({});\n}}\n\n", fmt::join(outs, ", "));
  return b;
}

std::string schema_entry(const OpDef& op) {
  std::vector<std::string> args, outs;
  for (const auto& a : op.args)
    args.push_back(fmt::format("{{{}, {}, {}, {}, {}, {}}}", quote(a.name), quote(attr_kind_name(a.kind)), quote(a.dtype_class),
                               a.default_cpp ? "true" : "false", quote(a.default_text),
                               std::count(op.nondiff.begin(), op.nondiff.end(), a.name) ? "true" : "false"));
  for (const auto& o : op.outputs)
    outs.push_back(fmt::format("{{{}, {}, {}}}", quote(o.name), o.is_list ? "true" : "false", o.differentiable ? "true" : "false"));
  std::vector<std::string> problems;
  for (const auto& p : op.bench.problems.empty() ? op.test.samples : op.bench.problems) problems.push_back(bench_problem(op, p));
  const bool has_kernels = op.view.empty();
  // One small function per op: a single initializer of the whole table took GCC minutes (and under
  // ASan, 25 minutes), its cleanup code growing with every nested temporary.
  return fmt::format("[[gnu::noinline]] OpSchema schema_{}() {{\n  return {{{}, {}, {}, {{{}}}, {{{}}}, {}, {}, {}, &boxed_{}, {{{}}}, {}, &meta_{}, {}, {}, {}}};\n}}\n\n", op.name, quote(op.name),
                     quote(op.doc), quote(op.category), fmt::join(args, ", "), fmt::join(outs, ", "),
                     op.differentiable() ? "true" : "false", has_kernels ? "false" : "true", op.random ? "true" : "false", op.name,
                     fmt::join(problems, ",\n      "), flops_lambda(op), op.name, has_kernels ? "&bind_" + op.name : "nullptr",
                     "&prepare_" + op.name, "&prepared_" + op.name);
}

}  // namespace

void emit_schema(const OpSet& set, const std::string& dir) {
  std::string c = kHeader;
  c += "#include \"pd/ops/op_schema.h\"\n\n#include \"elementwise_ops.h\"\n#include \"op_api.h\"\n#include \"pd/ops/op_support.h\"\n#include \"pd/ops/shape_rules.h\"\n#include \"pd/ops/views.h\"\n"
       "#include \"registry.h\"\n\nnamespace pd {\nnamespace {\n\n";
  for (const auto& op : set.ops) {
    c += boxed_fn(op) + meta_fn(op, false) + prepared_fns(op);
    if (op.view.empty()) c += meta_fn(op, true);
    c += schema_entry(op);
  }
  c += "}  // namespace\n\nconst std::vector<OpSchema>& all_op_schemas() {\n  static const std::vector<OpSchema> table = [] {\n"
       "    std::vector<OpSchema> t;\n";
  c += fmt::format("    t.reserve({});\n", set.ops.size());
  for (const auto& op : set.ops) c += fmt::format("    t.push_back(schema_{}());\n", op.name);
  c += fmt::format("    return t;\n  }}();\n  return table;\n}}\n\nsize_t op_count() {{ return {}; }}\n\n}}  // namespace pd\n", set.ops.size());
  write_if_changed(dir + "/op_schema.cc", c);
}

}  // namespace pd::codegen
