// What one ONNX node's converter sees: its inputs as program values or import-time constants, its
// attributes with ONNX defaults, and a builder that appends ops of ops.yaml (folding them at once when
// every input is a constant, with the constant folding pd-opt runs). The converters live in one table,
// import_ops.cc.
#pragma once
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "pd/ir/program.h"

namespace pd::io::onnx_import {

// A 1-D (or 0-D) integer tensor known at import time except for some dynamic extents: what Shape gives
// for a value whose batch is -1, and what Gather/Concat/Slice/Unsqueeze of it give. Reshape and Expand
// resolve such shapes against their input's own dynamic extents.
struct SymbolicInts {
  std::vector<int64_t> values;       // the entries (0 where the entry is a symbol)
  std::vector<std::string> symbols;  // "" for a known entry, else the extent's name ("batch")
  bool scalar = false;               // 0-D
  bool known() const;
  std::string str() const;  // "[batch, 512]"
};

class Importer;

class NodeContext {
 public:
  NodeContext(Importer& importer, const onnx::NodeProto& node) : im_(importer), node_(node) {}
  const onnx::NodeProto& node() const { return node_; }
  int opset() const;
  std::string where() const;  // "node 'Conv_0' (Conv)"

  // Inputs. An absent optional input has an empty name.
  bool has_input(size_t i) const;
  ir::ValueId input(size_t i) const;                  // as a program value; throws when absent
  const ir::ValueType& type(ir::ValueId v) const;
  const ir::ValueType& input_type(size_t i) const { return type(input(i)); }
  bool is_constant(size_t i) const;                   // known now (initializer, Constant, folded)
  Tensor constant(size_t i, const char* what) const;  // throws naming `what` when not known now
  std::vector<int64_t> constant_ints(size_t i, const char* what) const;
  double constant_scalar(size_t i, const char* what) const;
  // Known or symbolic integers (shape computations); throws when neither.
  SymbolicInts ints(size_t i, const char* what) const;
  bool is_symbolic(size_t i) const;
  // The ONNX node that computed input i (nullptr for graph inputs and initializers): for patterns such as
  // MatMul(x, Transpose(W)), which is linear(x, W).
  const onnx::NodeProto* producer(size_t i) const;
  // The program value of an ONNX value by name (throws when unknown or symbolic).
  ir::ValueId value(const std::string& onnx_name) const;
  // Per dim of a program value: "" where the extent is known, else its symbol (ONNX dim_param, or a name
  // made unique per value and axis).
  std::vector<std::string> dim_symbols(ir::ValueId v) const;
  // Names the dynamic extents of a value a converter made from its input's (""s where known), so that
  // a later Reshape to Shape(...) of either matches them.
  void set_dim_symbols(ir::ValueId v, std::vector<std::string> syms);
  // A graph input with the dynamic extent `symbol`, and the axis it has it at (kNoValue if none): what an
  // Expand of a constant to that extent broadcasts against (ViT's class token to [batch, 1, 768]).
  ir::ValueId input_with_extent(const std::string& symbol, int64_t& axis) const;

  // Attributes, with the ONNX default when absent.
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  Tensor attr_tensor(const std::string& name) const;

  // Building. op() appends an ops.yaml op (folded now when all of its inputs are constants) and returns
  // its results; param() adds a constant; output() binds the node's i-th output.
  std::vector<ir::ValueId> ops(const std::string& type, const std::vector<std::vector<ir::ValueId>>& inputs,
                               const AttrMap& attrs = {});
  ir::ValueId op(const std::string& type, const std::vector<std::vector<ir::ValueId>>& inputs,
                 const AttrMap& attrs = {}) {
    return ops(type, inputs, attrs)[0];
  }
  ir::ValueId param(const Tensor& t, const std::string& hint);
  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }
  bool output_used(size_t i) const;
  void output(size_t i, ir::ValueId v);
  void output_ints(size_t i, const SymbolicInts& s);  // a fully known one becomes a constant

  // Errors about this node: kInvalidArgument / kNotImplemented with where() in front.
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void unsupported(const std::string& what) const;

 private:
  Importer& im_;
  const onnx::NodeProto& node_;
};

// One converter per ONNX op type (the default domain); import_ops.cc.
using Converter = void (*)(NodeContext&);
const Converter* find_converter(const std::string& onnx_type);
std::vector<std::string> supported_onnx_ops();

}  // namespace pd::io::onnx_import
