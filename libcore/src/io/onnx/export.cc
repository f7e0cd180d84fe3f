// Program -> ONNX. Every op is looked up before any work (a program with ops that have no ONNX form is
// refused with the whole list); the model is then built, checked by onnx::checker and strict shape
// inference, and written atomically.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <map>

#include "export_context.h"
#include "onnx_tensor.h"
#include "pd/io/onnx.h"
#include "pd/io/tensor_file.h"
#include "pd/ir/pass.h"

namespace pd::io {
namespace onnx_export {

std::string ExportContext::in(size_t slot) const {
  return slot < op_.inputs.size() && !op_.inputs[slot].empty() ? p_.value(op_.inputs[slot][0]).name : "";
}
const ir::ValueType& ExportContext::in_type(size_t slot) const { return p_.value(op_.inputs.at(slot).at(0)).type; }
std::string ExportContext::out(size_t i) const { return p_.value(op_.results.at(i)).name; }
const ir::ValueType& ExportContext::out_type(size_t i) const { return p_.value(op_.results.at(i)).type; }
std::vector<std::string> ExportContext::list(size_t slot) const {
  std::vector<std::string> out;
  for (ir::ValueId v : op_.inputs.at(slot)) out.push_back(p_.value(v).name);
  return out;
}

int64_t ExportContext::attr_int(const std::string& name) const { return ir::attr_int(op_, name); }
double ExportContext::attr_float(const std::string& name) const { return ir::attr_float(op_, name); }
bool ExportContext::attr_bool(const std::string& name) const { return ir::attr_bool(op_, name); }
std::vector<int64_t> ExportContext::attr_ints(const std::string& name) const { return ir::attr_ints(op_, name); }
std::vector<double> ExportContext::attr_floats(const std::string& name) const { return ir::attr_floats(op_, name); }
std::string ExportContext::attr_string(const std::string& name) const { return ir::attr_string(op_, name); }

onnx::NodeProto* ExportContext::node(const std::string& type, const std::vector<std::string>& inputs,
                                     const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(type);
  n->set_name(fmt::format("{}_{}", type, graph_->node_size() - 1));
  for (const std::string& s : inputs) n->add_input(s);
  for (const std::string& s : outputs) n->add_output(s);
  return n;
}

// Names made here end in "/export_N" after the op's first result, which no program value can be.
std::string ExportContext::tmp(const std::string& what) {
  return fmt::format("{}/{}_{}", out(0), what, graph_->node_size() + graph_->initializer_size());
}

std::string ExportContext::ints(const std::vector<int64_t>& values, const std::string& hint) {
  const std::string name = tmp(hint);
  onnx_util::from_tensor(Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())}), name,
                         graph_->add_initializer());
  return name;
}

std::string ExportContext::scalar(double value, DType dtype, const std::string& hint) {
  return constant(Tensor::full_scalar(value, dtype), hint);
}

std::string ExportContext::constant(const Tensor& value, const std::string& hint) {
  const std::string name = tmp(hint);
  onnx_util::from_tensor(value, name, graph_->add_initializer());
  return name;
}

bool ExportContext::out_used(size_t i) const {
  const ir::ValueId v = op_.results.at(i);
  return !p_.users(v).empty() || p_.is_output(v);
}

void ExportContext::refuse(const std::string& why) const {
  raise(ErrorCode::kNotImplemented, "op {} (result '{}') has no ONNX form at opset {}: {}", op_.type, out(0), opset_, why);
}

void set_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_attr(onnx::NodeProto* n, const std::string& name, double v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}
void set_attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

}  // namespace onnx_export

namespace {

// -1 extents become symbolic dims: "batch" for the leading one (what users and onnxruntime expect of a
// batched input), NAME_dimD for others.
void set_value_info(onnx::ValueInfoProto* vi, const std::string& name, const ir::ValueType& t, bool name_dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_util::onnx_type_of(t.dtype));
  auto* shape = tt->mutable_shape();
  for (size_t d = 0; d < t.shape.size(); ++d) {
    auto* dim = shape->add_dim();
    if (t.shape[d] >= 0) dim->set_dim_value(t.shape[d]);
    else if (name_dims) dim->set_dim_param(d == 0 ? "batch" : fmt::format("{}_dim{}", name, d));
  }
}

void check_exportable(const ir::Program& p, int opset) {
  PD_CHECK(opset >= kOnnxMinOpset && opset <= kOnnxMaxOpset, ErrorCode::kInvalidArgument,
           "--opset {} is out of the supported range {}-{}", opset, kOnnxMinOpset, kOnnxMaxOpset);
  PD_CHECK(p.target().empty(), ErrorCode::kNotImplemented,
           "the program is lowered for target {} (fused and int8 kernels of this toolchain); export the portable model "
           "instead (pd-opt without --target, or the model pd-train wrote)", p.target());
  std::map<std::string, int64_t> missing;
  for (const ir::Operation& op : p.ops())
    if (!onnx_export::find_exporter(op.type)) ++missing[op.type];
  if (missing.empty()) return;
  std::vector<std::string> list;
  for (const auto& [type, n] : missing) list.push_back(fmt::format("{} x{}", type, n));
  raise(ErrorCode::kNotImplemented, "ops without an ONNX form: {} (nothing was written)", fmt::join(list, ", "));
}

}  // namespace

void export_onnx(const ir::Program& p, const std::string& path, const OnnxExportOptions& options,
                 OnnxExportReport* report) {
  check_exportable(p, options.opset);
  onnx::ModelProto model;
  model.set_ir_version(options.opset <= 14 ? 7 : 8);  // what onnxruntime pairs with these opsets
  model.set_producer_name("paddle-cpp");
  model.set_producer_version(options.producer_version);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("paddle_cpp");
  for (ir::ValueId id : p.inputs()) set_value_info(g->add_input(), p.value(id).name, p.value(id).type, true);
  for (const auto& [name, t] : p.params()) onnx_util::from_tensor(t, name, g->add_initializer());
  for (int32_t i = 0; i < static_cast<int32_t>(p.ops().size()); ++i) {
    onnx_export::ExportContext ctx(p, i, options.opset, g);
    (*onnx_export::find_exporter(p.ops()[i].type))(ctx);
    if (report && ctx.was_decomposed()) ++report->decomposed[p.ops()[i].type];
  }
  for (size_t k = 0; k < p.outputs().size(); ++k) {
    const ir::Value& v = p.value(p.outputs()[k]);
    const std::string& name = p.output_names()[k];
    if (name != v.name) {  // ONNX outputs are value names: an Identity gives the output its own
      auto* n = g->add_node();
      n->set_op_type("Identity");
      n->set_name("output_" + name);
      n->add_input(v.name);
      n->add_output(name);
    }
    set_value_info(g->add_output(), name, v.type, false);
  }
  try {
    onnx::checker::check_model(model);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(true, 1));
  } catch (const std::exception& e) {
    raise(ErrorCode::kInternal, "{}: the exported model fails the ONNX checks (a bug in paddle-cpp's exporter): {}", path,
          e.what());
  }
  model.mutable_graph()->clear_value_info();  // shape inference's annotations: the checked model, not a fatter file
  std::string bytes;
  PD_CHECK(model.SerializeToString(&bytes), ErrorCode::kInternal, "{}: cannot serialise the ONNX model", path);
  write_file_atomic(path, bytes);
}

}  // namespace pd::io
