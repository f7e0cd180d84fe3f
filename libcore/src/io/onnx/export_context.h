// What one op's exporter sees: the op, the ONNX names of its values, and a builder of ONNX nodes and
// initializers. The exporters live in one table, export_ops.cc.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "pd/ir/program.h"

namespace pd::io::onnx_export {

class ExportContext {
 public:
  ExportContext(const ir::Program& p, int32_t op, int opset, onnx::GraphProto* graph)
      : p_(p), op_(p.ops()[op]), opset_(opset), graph_(graph) {}
  const ir::Operation& op() const { return op_; }
  int opset() const { return opset_; }
  // The ONNX name of input slot `slot` (its first value), or "" for an absent optional.
  std::string in(size_t slot) const;
  const ir::ValueType& in_type(size_t slot) const;
  std::string out(size_t i = 0) const;  // the ONNX name of result i
  const ir::ValueType& out_type(size_t i = 0) const;
  bool out_used(size_t i) const;  // whether an op or the program's outputs read result i
  std::vector<std::string> list(size_t slot) const;  // a Tensor[] slot

  // Attributes of our op (schema default when absent).
  int64_t attr_int(const std::string& name) const;
  double attr_float(const std::string& name) const;
  bool attr_bool(const std::string& name) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<double> attr_floats(const std::string& name) const;
  std::string attr_string(const std::string& name) const;

  // A node; returns it for attributes. A temporary value name (unique): tmp("sqrt").
  onnx::NodeProto* node(const std::string& type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs);
  std::string tmp(const std::string& what);
  // Initializers made for the export (a Reshape target, Clip bounds); unique names from `hint`.
  std::string ints(const std::vector<int64_t>& values, const std::string& hint);
  std::string scalar(double value, DType dtype, const std::string& hint);
  std::string constant(const Tensor& value, const std::string& hint);

  [[noreturn]] void refuse(const std::string& why) const;
  // Marks the op as written in several nodes (OnnxExportReport::decomposed).
  void decomposed() { decomposed_ = true; }
  bool was_decomposed() const { return decomposed_; }

 private:
  const ir::Program& p_;
  const ir::Operation& op_;
  int opset_;
  onnx::GraphProto* graph_;
  bool decomposed_ = false;
};

void set_attr(onnx::NodeProto* n, const std::string& name, int64_t v);
void set_attr(onnx::NodeProto* n, const std::string& name, double v);
void set_attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v);
void set_attr(onnx::NodeProto* n, const std::string& name, const std::string& v);

using Exporter = void (*)(ExportContext&);
void scaled_dot_product_attention(ExportContext& c);  // export_attention.cc
const Exporter* find_exporter(const std::string& op);

}  // namespace pd::io::onnx_export
