// One function per generated artifact; each returns nothing and writes into `out_dir`.
#pragma once
#include <string>

#include "op_model.h"

namespace pd::codegen {

void emit_kernels(const OpSet& set, const std::string& out_dir);     // kernels.h, registry.h, registry.cc
void emit_api(const OpSet& set, const std::string& out_dir);         // op_api.h, op_api.cc
void emit_grad_nodes(const OpSet& set, const std::string& out_dir);  // grad_nodes.h, grad_nodes.cc
void emit_schema(const OpSet& set, const std::string& out_dir);      // op_schema.cc
void emit_tests(const OpSet& set, const std::string& out_dir);       // op_tests.cc
void emit_docs(const OpSet& set, const std::string& out_dir);        // ops.md
void emit_elementwise(const OpSet& set, const std::string& out_dir); // elementwise_ops.h

// Shared pieces of the op API and the meta (shape-only) functions.
struct Expr;
std::string emit_rule_call(const Expr& e, const OpDef& op, const std::string& ns);
std::string emit_prologue(const OpDef& op, const char* cast_fn);
std::string emit_outputs(const OpDef& op, const char* alloc);

// Shared spellings.
std::string kernel_params(const OpDef& op, bool with_names);
std::string grad_node_class(const OpDef& op);
std::string dtype_enum(const std::string& name);  // "f32" -> "::pd::DType::f32"
std::string attr_value_cpp(const ArgDef& a, const std::string& value_cpp);  // wraps a value as ::pd::AttrValue

}  // namespace pd::codegen
