// What one PaddlePaddle op's converter sees (import_ops.cc): its input variables as program values
// (parameters enter the program when first read), its attributes with defaults, Paddle's declared type
// of its outputs, and a builder that appends ops of ops.yaml, folding them at once when every input is a
// constant (a reshape of a bias, a slice of a position table).
#pragma once
#include <string>
#include <vector>

#include "paddle_graph.h"
#include "pd/ir/program.h"

namespace pd::io::paddle_import {

class Importer;

// A shape computed in the program (Paddle's shape op, then slices and casts of it) that holds an extent
// known only at run time (-1): kept out of the program; what reads a whole shape gets a constant.
struct ShapeValue {
  std::vector<int64_t> extents;
  DType dtype = DType::i64;
  bool scalar = false;  // one extent as a 0-D tensor (a slice with decrease_axis)
};

class OpContext {
 public:
  OpContext(Importer& importer, const PaddleOp& op) : im_(importer), op_(op) {}
  const PaddleOp& op() const { return op_; }
  std::string where() const { return op_.where(); }

  // Inputs by slot ("X", "Filter"). An absent or empty slot: has() is false.
  bool has(const std::string& slot) const;
  const std::string& in_name(const std::string& slot) const;   // exactly one variable, else fail()
  ir::ValueId in(const std::string& slot) const { return value(in_name(slot)); }
  std::vector<ir::ValueId> ins(const std::string& slot) const;
  ir::ValueId value(const std::string& var) const;
  const ir::ValueType& type(ir::ValueId v) const;
  // The tensor of a parameter or program constant, without adding it to the program (nullptr otherwise).
  const Tensor* constant(const std::string& var) const;
  // The shape `var` holds where it has an extent known only at run time (nullptr otherwise: a shape known
  // whole is a constant).
  const ShapeValue* shape_value(const std::string& var) const;
  // How many ops read variable `var`, a fetch counting as one.
  int64_t readers(const std::string& var) const;
  // The parameter `var` is a reshape (reshape2, unsqueeze2, squeeze2, assign) of, or "" (names for
  // tensors the importer computes from it: a conv bias).
  std::string origin(const std::string& var) const;

  // Attributes (ints also read as floats and bools, bools as ints).
  bool has_attr(const std::string& name) const { return op_.attrs.count(name) > 0; }
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  bool attr_bool(const std::string& name, bool def) const { return attr_int(name, def ? 1 : 0) != 0; }
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(const std::string& name) const;  // [] when absent
  std::string attr_string(const std::string& name, const std::string& def) const;

  // Paddle's declared type of output `slot` (nullptr when the program does not say).
  const PaddleVar* declared(const std::string& slot) const;

  // Building: ops() appends an op (folded now when its inputs are all constants); param() adds a
  // constant named `name` when that name is free, else a unique variant of it; out() binds an output.
  std::vector<ir::ValueId> ops(const std::string& type, const std::vector<std::vector<ir::ValueId>>& inputs,
                               const AttrMap& attrs = {});
  ir::ValueId op(const std::string& type, const std::vector<std::vector<ir::ValueId>>& inputs, const AttrMap& attrs = {}) {
    return ops(type, inputs, attrs)[0];
  }
  ir::ValueId param(const Tensor& t, const std::string& name);
  ir::ValueId scalar(double v, DType dtype);  // a 0-D constant, named after the op's output
  void out(const std::string& slot, ir::ValueId v);
  void outs(const std::string& slot, const std::vector<ir::ValueId>& vs);  // a list output (split)
  void out_shape(const std::string& slot, const ShapeValue& s);            // a constant where known whole
  void count_fused();  // a bias add taken into the op before it (PaddleImportReport::fused)
  ir::Program& program() const;

  [[noreturn]] void fail(const std::string& what) const;         // kInvalidArgument, where() in front
  [[noreturn]] void unsupported(const std::string& what) const;  // kNotImplemented

 private:
  const AttrValue* attr(const std::string& name) const;
  Importer& im_;
  const PaddleOp& op_;
};

// One converter per ProgramDesc op type (PIR types arrive translated); import_ops.cc.
using Converter = void (*)(OpContext&);
const Converter* find_converter(const std::string& type);
std::vector<std::string> supported_paddle_ops();

}  // namespace pd::io::paddle_import
