// Backward formulas: `mul(grad, y)`, `if(transpose_x, matmul(y, grad, transpose_y, true), ...)`.
// A formula is a call tree over ops from ops.yaml plus a few builtins (shape, dtype, numel_ratio,
// matrix_shape, if, not, ...; the list is kBuiltins in formula.cc). Parsing and validation happen at codegen time so that a typo in ops.yaml
// is reported as ops.yaml:LINE:COL, not as a C++ compile error in generated code.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "op_model.h"

namespace pd::codegen {

struct Expr {
  enum Kind { Call, Ident, Number, List, Bool } kind = Ident;
  std::string text;  // function name, identifier, number or bool literal
  std::vector<Expr> args;
  Pos pos;
};

Expr parse_formula(const Formula& f);
// Checks every formula and shape rule of every op; throws CodegenError with FILE:LINE:COL.
void validate_formulas(const OpSet& set, const std::string& file);
// Names of inputs/outputs/attrs the expression reads as values (not only through shape()/dtype()).
void collect_value_names(const Expr& e, std::set<std::string>& out);

enum class Slot { Tensor, Attr, Any };
// C++ for `e` inside the GradNode of `owner`; `slot` says whether a Tensor is expected here.
std::string emit_expr(const Expr& e, const OpDef& owner, const OpSet& set, Slot slot);

bool is_builtin(const std::string& name);

}  // namespace pd::codegen
