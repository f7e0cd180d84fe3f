#include "formula.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace pd::codegen {
namespace {

struct Parser {
  const std::string& s;
  Pos base;
  size_t i = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    throw CodegenError(fmt::format("{}:{}:{}: in formula '{}': {}", "ops.yaml", base.line,
                                   base.col + static_cast<int>(i), s, msg));
  }
  void skip() {
    while (i < s.size() && isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  Pos here() const { return {base.line, base.col + static_cast<int>(i)}; }
  Expr parse() {
    Expr e = expr();
    skip();
    if (i != s.size()) fail(fmt::format("unexpected '{}'", s.substr(i)));
    return e;
  }
  std::vector<Expr> items(char close) {
    std::vector<Expr> out;
    skip();
    if (i < s.size() && s[i] == close) {
      ++i;
      return out;
    }
    while (true) {
      out.push_back(expr());
      skip();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == close) {
        ++i;
        return out;
      }
      fail(fmt::format("expected ',' or '{}'", close));
    }
  }
  Expr expr() {
    skip();
    Expr e;
    e.pos = here();
    if (i >= s.size()) fail("unexpected end of formula");
    char c = s[i];
    if (c == '[') {
      ++i;
      e.kind = Expr::List;
      e.args = items(']');
      return e;
    }
    if (isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.') {
      size_t start = i++;
      while (i < s.size() && (isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' ||
                              ((s[i] == '-' || s[i] == '+') && s[i - 1] == 'e')))
        ++i;
      e.kind = Expr::Number;
      e.text = s.substr(start, i - start);
      return e;
    }
    if (isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = i;
      while (i < s.size() && (isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      e.text = s.substr(start, i - start);
      skip();
      if (i < s.size() && s[i] == '(') {
        ++i;
        e.kind = Expr::Call;
        e.args = items(')');
      } else {
        e.kind = (e.text == "true" || e.text == "false") ? Expr::Bool : Expr::Ident;
      }
      return e;
    }
    fail(fmt::format("unexpected character '{}'", c));
  }
};

struct Builtin {
  const char* name;
  size_t arity;
};
constexpr Builtin kBuiltins[] = {{"shape", 1},          {"dtype", 1},          {"numel_ratio", 2},
                                 {"matrix_shape", 1},   {"if", 3},             {"not", 1},
                                 {"inverse_perm", 1},   {"negate", 1},         {"sizes_along", 2},
                                 {"tile_grad_shape", 2}, {"tile_grad_axes", 2}, {"reduction_scale", 2},
                                 {"matmul_x_shape", 2}, {"matmul_y_shape", 2}, {"matmul_grad_shape", 4}};
// Builtins that yield a number: in a tensor slot they become a 0-D tensor of the gradient's dtype.
bool is_number_builtin(const std::string& name) { return name == "numel_ratio" || name == "reduction_scale"; }

[[noreturn]] void fail_at(const std::string& file, Pos p, const std::string& msg) {
  throw CodegenError(fmt::format("{}:{}:{}: {}", file, p.line, p.col, msg));
}

std::vector<std::string> known_names(const OpDef& op) {
  std::vector<std::string> names = {"grad"};
  for (const auto& a : op.args) names.push_back(a.name);
  for (const auto& o : op.outputs) {
    names.push_back(o.name);
    names.push_back("grad_" + o.name);
  }
  return names;
}

void check_expr(const Expr& e, const OpDef& owner, const OpSet& set, const std::string& file, bool in_shape_rule) {
  if (e.kind == Expr::Ident && e.text == "none" && !in_shape_rule) return;  // an absent optional tensor
  if (e.kind == Expr::Ident) {
    auto names = in_shape_rule ? std::vector<std::string>{} : known_names(owner);
    if (in_shape_rule)
      for (const auto& a : owner.args) names.push_back(a.name);
    if (std::find(names.begin(), names.end(), e.text) == names.end())
      fail_at(file, e.pos, fmt::format("unknown name '{}' in op '{}': expected one of {}", e.text, owner.name,
                                       fmt::join(names, ", ")));
  }
  if (e.kind == Expr::Call && !in_shape_rule) {
    if (is_builtin(e.text)) {
      for (const auto& b : kBuiltins)
        if (e.text == b.name && e.args.size() != b.arity)
          fail_at(file, e.pos, fmt::format("builtin '{}' takes {} argument(s), got {}", e.text, b.arity, e.args.size()));
    } else {
      const OpDef* callee = set.find(e.text);
      if (!callee)
        fail_at(file, e.pos, fmt::format("backward formula of '{}' calls unknown op '{}'", owner.name, e.text));
      size_t required = 0;
      for (const auto& a : callee->args)
        if (!a.default_cpp) ++required;
      if (e.args.size() < required || e.args.size() > callee->args.size())
        fail_at(file, e.pos, fmt::format("op '{}' takes {} to {} arguments, but the formula passes {}", callee->name,
                                         required, callee->args.size(), e.args.size()));
    }
  }
  for (const auto& a : e.args) check_expr(a, owner, set, file, in_shape_rule);
}

}  // namespace

bool is_builtin(const std::string& name) {
  for (const auto& b : kBuiltins)
    if (name == b.name) return true;
  return false;
}

Expr parse_formula(const Formula& f) { return Parser{f.text, f.pos}.parse(); }

void validate_formulas(const OpSet& set, const std::string& file) {
  for (const auto& op : set.ops) {
    for (const auto* list : {&op.backward, &op.fused_backward}) {
      for (const auto& f : *list) {
        for (const auto& t : f.targets) {
          const ArgDef* a = op.arg(t);
          if (!a || !a->is_tensor())
            fail_at(file, f.pos, fmt::format("backward of '{}' names '{}', which is not a tensor input", op.name, t));
        }
        check_expr(parse_formula(f), op, set, file, false);
      }
    }
    if (!op.dtype_rule.empty()) {
      Expr rule = parse_formula(Formula{{}, op.dtype_rule, op.pos});
      const bool known = rule.kind == Expr::Call && (rule.text == "promote" || rule.text == "same" || rule.text == "attr");
      if (!known || rule.args.empty())
        fail_at(file, op.pos, fmt::format("op '{}': dtype rule '{}' must be promote(inputs...), same(input) or attr(name)",
                                          op.name, op.dtype_rule));
      for (const auto& a : rule.args) {
        const ArgDef* arg = a.kind == Expr::Ident ? op.arg(a.text) : nullptr;
        const bool ok = arg && (rule.text == "attr" ? arg->kind == ArgKind::DType : arg->is_tensor());
        if (!ok)
          fail_at(file, op.pos, fmt::format("op '{}': dtype rule '{}' names '{}', which is not a {} argument", op.name,
                                            op.dtype_rule, a.text, rule.text == "attr" ? "dtype" : "tensor"));
      }
    }
    for (const auto& o : op.outputs) {
      if (o.infer.empty()) {
        if (op.view.empty()) fail_at(file, o.pos, fmt::format("output '{}' of '{}' has no shape rule", o.name, op.name));
        continue;
      }
      check_expr(parse_formula(Formula{{}, o.infer, o.pos}), op, set, file, true);
    }
  }
}

void collect_value_names(const Expr& e, std::set<std::string>& out) {
  if (e.kind == Expr::Ident && e.text != "grad" && e.text != "none") out.insert(e.text);  // `grad` is the incoming gradient
  if (e.kind == Expr::Call && is_builtin(e.text) && e.text != "if" && e.text != "not") return;
  for (const auto& a : e.args) collect_value_names(a, out);
}

std::string emit_expr(const Expr& e, const OpDef& owner, const OpSet& set, Slot slot) {
  switch (e.kind) {
    case Expr::Number:
      if (slot == Slot::Tensor) return fmt::format("::pd::Tensor::full_scalar({}, grad_dtype, grad_place)", e.text);
      return e.text;
    case Expr::Bool:
      return e.text;
    case Expr::Ident: {
      if (e.text == "none") return "::pd::Tensor()";
      const ArgDef* a = owner.arg(e.text);
      if (slot == Slot::Tensor && a && (a->kind == ArgKind::Float || a->kind == ArgKind::Int))
        return fmt::format("::pd::Tensor::full_scalar({}, grad_dtype, grad_place)", e.text);
      return e.text;
    }
    case Expr::List: {
      std::vector<std::string> items;
      for (const auto& a : e.args) items.push_back(emit_expr(a, owner, set, Slot::Attr));
      return fmt::format("std::vector<int64_t>{{{}}}", fmt::join(items, ", "));
    }
    case Expr::Call:
      break;
  }
  const std::string& f = e.text;
  if (f == "shape") return e.args[0].text + "_shape";
  if (f == "dtype") return e.args[0].text + "_dtype";
  if (f == "not") return fmt::format("(!{})", emit_expr(e.args[0], owner, set, Slot::Attr));
  if (f == "if")
    return fmt::format("({} ? {} : {})", emit_expr(e.args[0], owner, set, Slot::Attr),
                       emit_expr(e.args[1], owner, set, slot), emit_expr(e.args[2], owner, set, slot));
  if (is_builtin(f)) {
    // Other builtins are functions in op_support.h; a tensor named in them stands for its shape(s).
    std::vector<std::string> args;
    for (const auto& a : e.args) {
      const ArgDef* arg = a.kind == Expr::Ident ? owner.arg(a.text) : nullptr;
      const OutputDef* out = a.kind == Expr::Ident ? owner.output(a.text) : nullptr;
      if ((arg && arg->kind == ArgKind::TensorList) || (out && out->is_list)) args.push_back(a.text + "_shapes");
      else if ((arg && arg->is_tensor()) || out) args.push_back(a.text + "_shape");
      else args.push_back(emit_expr(a, owner, set, Slot::Attr));
    }
    std::string v = fmt::format("::pd::builtin_{}({})", f, fmt::join(args, ", "));
    return slot == Slot::Tensor && is_number_builtin(f) ? fmt::format("::pd::Tensor::full_scalar({}, grad_dtype, grad_place)", v) : v;
  }
  const OpDef* callee = set.find(f);
  std::vector<std::string> args;
  for (size_t i = 0; i < e.args.size(); ++i)
    args.push_back(emit_expr(e.args[i], owner, set, callee->args[i].is_tensor() ? Slot::Tensor : Slot::Attr));
  const std::string call = fmt::format("::pd::ops::{}({})", f, fmt::join(args, ", "));
  // A creation op (zeros, full) makes a CPU tensor: the gradient belongs where the node ran.
  return callee->tensor_args().empty() ? fmt::format("::pd::detail::on_place({}, grad_place)", call) : call;
}

}  // namespace pd::codegen
