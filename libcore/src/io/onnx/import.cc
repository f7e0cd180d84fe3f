// ONNX -> Program. The file is parsed, checked by onnx::checker and run through ONNX shape inference
// (for the symbolic names of dynamic extents); every node type is looked up before any work so that an
// unsupported model is refused with its whole gap; then nodes convert in order through import_ops.cc.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <map>
#include <set>

#include "import_context.h"
#include "onnx_tensor.h"
#include "opset_view.h"
#include "pd/io/onnx.h"
#include "pd/io/tensor_file.h"
#include "pd/ir/pass.h"
#include "pd/ops/op_schema.h"

namespace pd::io {
namespace onnx_import {

bool SymbolicInts::known() const {
  for (const std::string& s : symbols)
    if (!s.empty()) return false;
  return true;
}

std::string SymbolicInts::str() const {
  std::vector<std::string> parts;
  for (size_t i = 0; i < values.size(); ++i) parts.push_back(symbols[i].empty() ? std::to_string(values[i]) : symbols[i]);
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// What the importer knows of one ONNX value.
struct Known {
  ir::ValueId id = ir::kNoValue;     // its program value (a param when known now)
  std::optional<SymbolicInts> ints;  // a shape computation with dynamic extents (no program value)
};

class Importer {
 public:
  Importer(onnx::ModelProto& model, std::string dir) : model_(model), dir_(std::move(dir)) {}

  ir::Program run() {
    const onnx::GraphProto& g = model_.graph();
    read_symbols(g);
    std::set<std::string> initializer_names;
    for (const onnx::TensorProto& t : g.initializer()) {
      const std::string where = fmt::format("initializer '{}'", t.name());
      PD_CHECK(!known_.count(t.name()), ErrorCode::kParse, "{} is defined twice", where);
      known_[t.name()].id = program_.add_param(t.name(), onnx_util::to_tensor(t, dir_, where));
      initializer_names.insert(t.name());
    }
    for (const onnx::ValueInfoProto& in : g.input()) {
      if (initializer_names.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
      known_[in.name()].id = program_.add_input(in.name(), value_type(in, "graph input"));
    }
    for (const onnx::NodeProto& node : g.node()) {
      for (const std::string& out : node.output()) producers_[out] = &node;
      convert(node);
    }
    for (const onnx::ValueInfoProto& out : g.output()) {
      auto it = known_.find(out.name());
      PD_CHECK(it != known_.end() && it->second.id != ir::kNoValue, ErrorCode::kParse,
               "graph output '{}' is not computed by any node", out.name());
      program_.mark_output(it->second.id, out.name());
    }
    program_.compact();
    ir::verify(program_);
    return std::move(program_);
  }

  int opset() const { return opset_; }
  ir::Program& program() { return program_; }
  std::map<std::string, Known>& known() { return known_; }
  const std::string& dir() const { return dir_; }
  int64_t& folded() { return folded_; }

  // Symbols of the dynamic extents of a program value (through its ONNX name and shape inference).
  std::vector<std::string> dim_symbols(ir::ValueId v) const {
    const ir::Value& val = program_.value(v);
    if (auto kept = value_symbols_.find(v); kept != value_symbols_.end() && kept->second.size() == val.type.shape.size())
      return kept->second;
    std::vector<std::string> out(val.type.shape.size());
    auto it = symbols_.find(val.name);
    for (size_t d = 0; d < out.size(); ++d) {
      if (val.type.shape[d] >= 0) continue;
      if (it != symbols_.end() && d < it->second.size() && !it->second[d].empty()) out[d] = it->second[d];
      else out[d] = fmt::format("{}:{}", val.name, d);  // unique to this value and axis
    }
    return out;
  }
  void set_dim_symbols(ir::ValueId v, std::vector<std::string> syms) { value_symbols_[v] = std::move(syms); }

 private:
  void read_symbols(const onnx::GraphProto& g) {
    auto add = [&](const onnx::ValueInfoProto& vi) {
      if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
      std::vector<std::string> syms;
      for (const auto& d : vi.type().tensor_type().shape().dim()) syms.push_back(d.has_dim_param() ? d.dim_param() : "");
      symbols_[vi.name()] = syms;
    };
    for (const auto& vi : g.input()) add(vi);
    for (const auto& vi : g.value_info()) add(vi);
    for (const auto& vi : g.output()) add(vi);
  }

  ir::ValueType value_type(const onnx::ValueInfoProto& vi, const char* what) const {
    const std::string where = fmt::format("{} '{}'", what, vi.name());
    PD_CHECK(vi.type().has_tensor_type(), ErrorCode::kNotImplemented, "{} is not a tensor (sequences, maps and "
             "optionals are not supported)", where);
    const auto& tt = vi.type().tensor_type();
    ir::ValueType t;
    t.dtype = onnx_util::dtype_of(tt.elem_type(), where);
    PD_CHECK(tt.has_shape(), ErrorCode::kNotImplemented, "{} has no rank; give --input-shape {}=DIMS", where, vi.name());
    for (const auto& d : tt.shape().dim()) t.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    return t;
  }

  void convert(const onnx::NodeProto& node) {
    const Converter* fn = find_converter(node.op_type());
    PD_CHECK(fn, ErrorCode::kInternal, "no converter for {}", node.op_type());  // refused before, in check_supported
    NodeContext ctx(*this, node);
    (*fn)(ctx);
    for (size_t i = 0; i < ctx.num_outputs(); ++i)
      PD_CHECK(!ctx.output_used(i) || known_.count(node.output(static_cast<int>(i))), ErrorCode::kInternal,
               "{}: output {} was not produced", ctx.where(), i);
  }

  onnx::ModelProto& model_;
  std::string dir_;
  int opset_ = 0;
  int64_t folded_ = 0;
  ir::Program program_;
  std::map<std::string, Known> known_;
  std::map<std::string, std::vector<std::string>> symbols_;  // ONNX value name -> dim_param per axis
  // Symbols a converter carried over from its input (a transpose, a reshape): exporters that write no
  // value_info leave the intermediates without names for their dynamic extents.
  std::map<ir::ValueId, std::vector<std::string>> value_symbols_;

 public:
  std::map<std::string, const onnx::NodeProto*> producers_;  // ONNX value name -> the node computing it


 public:
  void set_opset(int o) { opset_ = o; }
  std::set<std::string> used_;  // ONNX names some node or graph output reads
};

// ---- NodeContext ----------------------------------------------------------------------------------

int NodeContext::opset() const { return im_.opset(); }

std::string NodeContext::where() const {
  return node_.name().empty() ? fmt::format("{} node producing '{}'", node_.op_type(), node_.output_size() ? node_.output(0) : "")
                              : fmt::format("node '{}' ({})", node_.name(), node_.op_type());
}

void NodeContext::fail(const std::string& what) const { raise(ErrorCode::kInvalidArgument, "{}: {}", where(), what); }
void NodeContext::unsupported(const std::string& what) const {
  raise(ErrorCode::kNotImplemented, "{}: {}", where(), what);
}

bool NodeContext::has_input(size_t i) const {
  return static_cast<int>(i) < node_.input_size() && !node_.input(static_cast<int>(i)).empty();
}

const onnx::NodeProto* NodeContext::producer(size_t i) const {
  if (!has_input(i)) return nullptr;
  auto it = im_.producers_.find(node_.input(static_cast<int>(i)));
  return it == im_.producers_.end() ? nullptr : it->second;
}

ir::ValueId NodeContext::input(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is missing", i));
  return value(node_.input(static_cast<int>(i)));
}

ir::ValueId NodeContext::value(const std::string& name) const {
  auto it = im_.known().find(name);
  if (it == im_.known().end()) fail(fmt::format("input '{}' is not defined before this node", name));
  if (it->second.id == ir::kNoValue)
    unsupported(fmt::format("input '{}' is the shape computation {} that depends on dynamic extents, and this op "
                            "needs it as a tensor at run time; fix the extents with --input-shape NAME=DIMS",
                            name, it->second.ints->str()));
  return it->second.id;
}

const ir::ValueType& NodeContext::type(ir::ValueId v) const { return im_.program().value(v).type; }

bool NodeContext::is_constant(size_t i) const {
  if (!has_input(i)) return false;
  auto it = im_.known().find(node_.input(static_cast<int>(i)));
  return it != im_.known().end() && it->second.id != ir::kNoValue &&
         im_.program().value(it->second.id).kind == ir::ValueKind::Param;
}

bool NodeContext::is_symbolic(size_t i) const {
  if (!has_input(i)) return false;
  auto it = im_.known().find(node_.input(static_cast<int>(i)));
  return it != im_.known().end() && it->second.ints.has_value();
}

Tensor NodeContext::constant(size_t i, const char* what) const {
  if (!is_constant(i)) {
    if (is_symbolic(i)) {
      unsupported(fmt::format("{} ('{}') depends on dynamic extents: {}; fix them with --input-shape NAME=DIMS", what,
                              node_.input(static_cast<int>(i)), im_.known().at(node_.input(static_cast<int>(i))).ints->str()));
    }
    unsupported(fmt::format("{} (input {}, '{}') must be known at import time (an initializer, a Constant or computable "
                            "from them)", what, i, has_input(i) ? node_.input(static_cast<int>(i)) : ""));
  }
  return im_.program().param(input(i));
}

std::vector<int64_t> NodeContext::constant_ints(size_t i, const char* what) const {
  const Tensor t = constant(i, what);
  if (!is_integral(t.dtype())) fail(fmt::format("{} must be integers, got {}", what, dtype_name(t.dtype())));
  return t.to_vector<int64_t>();
}

double NodeContext::constant_scalar(size_t i, const char* what) const {
  const Tensor t = constant(i, what);
  if (t.numel() != 1) fail(fmt::format("{} must hold one value, got shape {}", what, shape_str(t.shape())));
  return t.to_vector<double>()[0];
}

SymbolicInts NodeContext::ints(size_t i, const char* what) const {
  if (is_symbolic(i)) return *im_.known().at(node_.input(static_cast<int>(i))).ints;
  const Tensor t = constant(i, what);
  if (!is_integral(t.dtype())) fail(fmt::format("{} must be integers, got {}", what, dtype_name(t.dtype())));
  if (t.dim() > 1) fail(fmt::format("{} must be 0-D or 1-D, got shape {}", what, shape_str(t.shape())));
  SymbolicInts s;
  s.values = t.to_vector<int64_t>();
  s.symbols.assign(s.values.size(), "");
  s.scalar = t.dim() == 0;
  return s;
}

std::vector<std::string> NodeContext::dim_symbols(ir::ValueId v) const { return im_.dim_symbols(v); }
void NodeContext::set_dim_symbols(ir::ValueId v, std::vector<std::string> syms) { im_.set_dim_symbols(v, std::move(syms)); }

ir::ValueId NodeContext::input_with_extent(const std::string& symbol, int64_t& axis) const {
  for (const ir::ValueId v : im_.program().inputs()) {
    const std::vector<std::string> syms = im_.dim_symbols(v);
    for (size_t d = 0; d < syms.size(); ++d)
      if (syms[d] == symbol) {
        axis = static_cast<int64_t>(d);
        return v;
      }
  }
  return ir::kNoValue;
}

static const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool NodeContext::has_attr(const std::string& name) const { return find_attr(node_, name) != nullptr; }

int64_t NodeContext::attr_int(const std::string& name, int64_t def) const {
  const auto* a = find_attr(node_, name);
  if (!a) return def;
  if (a->type() != onnx::AttributeProto::INT) fail(fmt::format("attribute '{}' must be an int", name));
  return a->i();
}

double NodeContext::attr_float(const std::string& name, double def) const {
  const auto* a = find_attr(node_, name);
  if (!a) return def;
  if (a->type() != onnx::AttributeProto::FLOAT) fail(fmt::format("attribute '{}' must be a float", name));
  return a->f();
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const auto* a = find_attr(node_, name);
  if (!a) return def;
  if (a->type() != onnx::AttributeProto::INTS) fail(fmt::format("attribute '{}' must be a list of ints", name));
  return {a->ints().begin(), a->ints().end()};
}

std::string NodeContext::attr_string(const std::string& name, const std::string& def) const {
  const auto* a = find_attr(node_, name);
  if (!a) return def;
  if (a->type() != onnx::AttributeProto::STRING) fail(fmt::format("attribute '{}' must be a string", name));
  return a->s();
}

Tensor NodeContext::attr_tensor(const std::string& name) const {
  const auto* a = find_attr(node_, name);
  if (!a || a->type() != onnx::AttributeProto::TENSOR) fail(fmt::format("attribute '{}' must be a tensor", name));
  return onnx_util::to_tensor(a->t(), im_.dir(), fmt::format("{} attribute '{}'", where(), name));
}

std::vector<ir::ValueId> NodeContext::ops(const std::string& type, const std::vector<std::vector<ir::ValueId>>& inputs,
                                          const AttrMap& attrs) {
  ir::Program& p = im_.program();
  std::vector<ir::ValueId> results;
  try {
    results = p.add_op(type, inputs, attrs);
  } catch (const Error& e) {
    raise(e.code(), "{}: {}", where(), e.what());
  }
  const int32_t index = static_cast<int32_t>(p.ops().size()) - 1;
  if (!ir::foldable(p, index)) return results;
  ++im_.folded();
  try {
    return ir::fold_op(p, index);
  } catch (const Error& e) {
    raise(e.code(), "{}: computing {} at import time: {}", where(), type, e.what());
  }
}

ir::ValueId NodeContext::param(const Tensor& t, const std::string& hint) {
  ir::Program& p = im_.program();
  return p.add_param(p.unique_name(hint), t);
}

bool NodeContext::output_used(size_t i) const {
  return static_cast<int>(i) < node_.output_size() && !node_.output(static_cast<int>(i)).empty() &&
         im_.used_.count(node_.output(static_cast<int>(i)));
}

void NodeContext::output(size_t i, ir::ValueId v) {
  if (static_cast<int>(i) >= node_.output_size() || node_.output(static_cast<int>(i)).empty()) return;
  const std::string& name = node_.output(static_cast<int>(i));
  ir::Program& p = im_.program();
  const ir::Value& val = p.value(v);
  // A new value takes the ONNX name (so errors and pd-infer name what the user sees in Netron); an alias
  // (Identity, Dropout) keeps the name it has.
  const bool fresh = val.kind == ir::ValueKind::OpResult || val.name.rfind("folded.", 0) == 0;
  if (fresh && p.find(name) == ir::kNoValue) p.rename(v, name);
  im_.known()[name].id = v;
}

void NodeContext::output_ints(size_t i, const SymbolicInts& s) {
  if (s.known()) {
    Tensor t = Tensor::from_vector<int64_t>(s.values, s.scalar ? Shape{} : Shape{static_cast<int64_t>(s.values.size())});
    output(i, param(t, node_.output(static_cast<int>(i))));
    return;
  }
  Known& k = im_.known()[node_.output(static_cast<int>(i))];
  k.id = ir::kNoValue;
  k.ints = s;
}

}  // namespace onnx_import

namespace {

using onnx_import::Importer;

int default_opset(const onnx::ModelProto& m) {
  int opset = -1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  return opset;
}

// Every node type the table lacks (or of another domain), with counts and the first node names.
void check_supported(const onnx::GraphProto& g) {
  struct Gap {
    int64_t count = 0;
    std::vector<std::string> names;
  };
  std::map<std::string, Gap> gaps;
  for (const onnx::NodeProto& n : g.node()) {
    const bool custom = !n.domain().empty() && n.domain() != "ai.onnx";
    if (!custom && onnx_import::find_converter(n.op_type())) continue;
    Gap& gap = gaps[custom ? n.domain() + "::" + n.op_type() : n.op_type()];
    if (++gap.count <= 3) gap.names.push_back(n.name().empty() ? "<unnamed>" : n.name());
  }
  if (gaps.empty()) return;
  std::string list;
  for (const auto& [type, gap] : gaps)
    list += fmt::format("\n  {} x{} (first: {})", type, gap.count, fmt::join(gap.names, ", "));
  raise(ErrorCode::kNotImplemented, "the model uses {} op type{} paddle-cpp cannot import:{}\n(nothing was written; "
        "docs/pd-convert.md lists the supported ops)", gaps.size(), gaps.size() == 1 ? "" : "s", list);
}

void apply_input_shapes(onnx::GraphProto* g, const std::map<std::string, Shape>& shapes) {
  for (const auto& [name, shape] : shapes) {
    onnx::ValueInfoProto* vi = nullptr;
    std::vector<std::string> names;
    for (auto& in : *g->mutable_input()) {
      names.push_back(in.name());
      if (in.name() == name) vi = &in;
    }
    PD_CHECK(vi, ErrorCode::kInvalidArgument, "--input-shape: the model has no input '{}' (inputs: {})", name,
             fmt::join(names, ", "));
    auto* dims = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
    PD_CHECK(dims->dim_size() == 0 || dims->dim_size() == static_cast<int>(shape.size()), ErrorCode::kInvalidArgument,
             "--input-shape {}: the model's input has rank {}, but {} extents were given", name, dims->dim_size(),
             shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      const auto* old = d < static_cast<size_t>(dims->dim_size()) ? &dims->dim(static_cast<int>(d)) : nullptr;
      PD_CHECK(!old || !old->has_dim_value() || shape[d] < 0 || old->dim_value() == shape[d], ErrorCode::kInvalidArgument,
               "--input-shape {}: extent {} is fixed at {} in the model, but {} was given", name, d,
               old ? old->dim_value() : 0, shape[d]);
    }
    // -1 (`?` on the command line) keeps the model's extent, its symbol included; a rank-less input gets one.
    const onnx::TensorShapeProto before = *dims;
    dims->clear_dim();
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] >= 0) dims->add_dim()->set_dim_value(shape[d]);
      else if (d < static_cast<size_t>(before.dim_size())) *dims->add_dim() = before.dim(static_cast<int>(d));
      else dims->add_dim()->set_dim_param(fmt::format("{}_dim{}", name, d));
    }
  }
}

// libonnx's shape inference for Conv and the pools divides by strides and dilations without checking
// them (a stride of 0 is a SIGFPE inside InferShapes, found by fuzz_onnx): refuse them first.
void check_window_attrs(const onnx::GraphProto& g, const std::string& path) {
  static const std::set<std::string> windowed = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool",
                                                 "AveragePool", "LpPool", "MaxUnpool"};
  for (const auto& n : g.node()) {
    if (!windowed.count(n.op_type())) continue;
    for (const auto& a : n.attribute()) {
      const bool list = a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
      if (list)
        for (int64_t v : a.ints())
          PD_CHECK(v >= 1, ErrorCode::kParse, "{}: node '{}' ({}): attribute {} holds {} (each must be at least 1)", path,
                   n.name(), n.op_type(), a.name(), v);
      if (a.name() == "group")
        PD_CHECK(a.i() >= 1, ErrorCode::kParse, "{}: node '{}' ({}): group {} (must be at least 1)", path, n.name(),
                 n.op_type(), a.i());
    }
  }
}

}  // namespace

ir::Program import_onnx(const std::string& path, const OnnxImportOptions& options, OnnxImportReport* report) {
  const std::string bytes = read_file_bytes(path);
  onnx::ModelProto model;
  PD_CHECK(model.ParseFromString(bytes), ErrorCode::kParse,
           "{}: not a readable ONNX model (the protobuf does not parse: truncated or corrupted?)", path);
  PD_CHECK(model.has_graph(), ErrorCode::kParse, "{}: the ONNX model has no graph", path);
  const int opset = default_opset(model);
  PD_CHECK(opset >= kOnnxMinOpset && opset <= kOnnxMaxImportOpset, ErrorCode::kNotImplemented,
           "{}: opset {} is out of the supported range {}-{} (re-export with opset_version={} for example)", path,
           opset < 0 ? std::string("(none for the default domain)") : std::to_string(opset), kOnnxMinOpset,
           kOnnxMaxImportOpset, opset > kOnnxMaxImportOpset ? 20 : 13);
  apply_input_shapes(model.mutable_graph(), options.input_shapes);
  check_supported(model.graph());
  const std::string dir = std::filesystem::path(path).parent_path().string();
  // The checker and shape inference know opsets up to 17: a newer model goes through its opset-17 view,
  // whose inferred value_info (the names of dynamic extents) comes back to the model.
  const bool newer = opset > onnx_import::kCheckerMaxOpset;
  onnx::ModelProto view;
  if (newer) view = onnx_import::opset17_view(model, dir);
  onnx::ModelProto& checked = newer ? view : model;
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(static_cast<int>(checked.ir_version()));
    std::unordered_map<std::string, int> opsets;
    for (const auto& o : checked.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(dir);
    onnx::checker::LexicalScopeContext lex;
    onnx::checker::check_graph(checked.graph(), ctx, lex);
  } catch (const std::exception& e) {
    raise(ErrorCode::kParse, "{}: the ONNX checker refuses the model: {}", path, e.what());
  }
  check_window_attrs(model.graph(), path);
  try {
    onnx::shape_inference::InferShapes(checked);
  } catch (const std::exception& e) {
    raise(ErrorCode::kParse, "{}: ONNX shape inference fails: {}", path, e.what());
  }
  if (newer) *model.mutable_graph()->mutable_value_info() = checked.graph().value_info();

  Importer importer(model, dir);
  importer.set_opset(opset);
  for (const auto& n : model.graph().node())
    for (const std::string& in : n.input()) importer.used_.insert(in);
  for (const auto& o : model.graph().output()) importer.used_.insert(o.name());
  ir::Program p;
  try {
    p = importer.run();
  } catch (const Error& e) {
    raise(e.code(), "{}: {}", path, e.what());
  }
  if (report) {
    report->opset = opset;
    report->ir_version = model.ir_version();
    report->producer = fmt::format("{} {}", model.producer_name(), model.producer_version());
    report->nodes = model.graph().node_size();
    report->folded = importer.folded();
    for (const auto& n : model.graph().node()) ++report->node_types[n.op_type()];
  }
  return p;
}

}  // namespace pd::io
