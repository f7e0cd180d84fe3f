// The opset-17 view of an opset 18-23 model (opset_view.h). What changed in the default domain after
// opset 17 for the op types the importer reads (onnx's operator changelog):
//   18  ReduceMax / ReduceMean / ReduceMin (and the other reductions but ReduceSum): axes an input, not an
//       attribute; Split: num_outputs; Pad: an axes input; Resize: antialias, axes, keep_aspect_ratio_policy
//   19  AveragePool: dilations; Cast: saturate (float8 only); Resize: half_pixel_symmetric
//   20  Gelu (new)
//   19-23 otherwise new element types only (float8, int4, ...), which dtype_of refuses by name.
#include "opset_view.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "onnx_tensor.h"

namespace pd::io::onnx_import {
namespace {

// Nodes the checker and ONNX shape inference skip (a domain with no schemas); their converters check them.
constexpr char kDeferred[] = "pd.checked_by_converter";

const onnx::AttributeProto* find(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

void erase(onnx::NodeProto& n, const std::string& name) {
  auto* attrs = n.mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == name) return attrs->DeleteSubrange(i, 1);
}

// Drops attribute `name` where it holds its default (`is_default`); true if it is gone.
template <typename IsDefault>
bool erase_if_default(onnx::NodeProto& n, const std::string& name, IsDefault is_default) {
  const onnx::AttributeProto* a = find(n, name);
  if (a && !is_default(*a)) return false;
  erase(n, name);
  return true;
}

bool has_input(const onnx::NodeProto& n, int i) { return n.input_size() > i && !n.input(i).empty(); }

// The int64 values of initializers and Constant nodes, by name.
class Constants {
 public:
  Constants(const onnx::GraphProto& g, std::string dir) : dir_(std::move(dir)) {
    for (const auto& t : g.initializer()) tensors_[t.name()] = &t;
    for (const auto& n : g.node())
      if (n.op_type() == "Constant" && n.output_size() == 1)
        if (const onnx::AttributeProto* v = find(n, "value"); v && v->has_t()) tensors_[n.output(0)] = &v->t();
  }

  // nullopt where the value is not a constant or cannot be read (its converter says why).
  std::optional<std::vector<int64_t>> ints(const std::string& name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) return std::nullopt;
    try {
      const Tensor t = onnx_util::to_tensor(*it->second, dir_, name);
      if (t.dtype() != DType::i64) return std::nullopt;
      return t.to_vector<int64_t>();
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

 private:
  std::string dir_;
  std::map<std::string, const onnx::TensorProto*> tensors_;
};

const std::set<std::string> kReductionsAxesInputSince18 = {"ReduceL1",      "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp",
                                                           "ReduceMax",     "ReduceMean", "ReduceMin",   "ReduceProd",
                                                           "ReduceSumSquare"};

// Rewrites `n` to its opset-17 form; false where there is none that means the same.
bool to_opset17(onnx::NodeProto& n, const Constants& constants) {
  const std::string& op = n.op_type();
  if (!onnx::OpSchemaRegistry::Schema(op, kCheckerMaxOpset, "")) return false;  // new since opset 18
  if (kReductionsAxesInputSince18.count(op)) {
    const onnx::AttributeProto* noop = find(n, "noop_with_empty_axes");
    const bool identity_without_axes = noop && noop->i() != 0;
    erase(n, "noop_with_empty_axes");
    if (!has_input(n, 1)) return !identity_without_axes;
    const auto axes = constants.ints(n.input(1));
    if (!axes || axes->empty()) return false;
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : *axes) a->add_ints(v);
    n.mutable_input()->DeleteSubrange(1, n.input_size() - 1);
    return true;
  }
  if (op == "Split") return !find(n, "num_outputs");  // an uneven last part has no opset-17 form
  if (op == "Pad") return !has_input(n, 3);
  if (op == "Resize") {
    const onnx::AttributeProto* coord = find(n, "coordinate_transformation_mode");
    if (coord && coord->s() == "half_pixel_symmetric") return false;
    return erase_if_default(n, "antialias", [](const auto& a) { return a.i() == 0; }) &&
           erase_if_default(n, "keep_aspect_ratio_policy", [](const auto& a) { return a.s() == "stretch"; }) &&
           !find(n, "axes");
  }
  if (op == "AveragePool")
    return erase_if_default(n, "dilations", [](const auto& a) {
      for (int64_t d : a.ints())
        if (d != 1) return false;
      return true;
    });
  if (op == "Cast" || op == "CastLike") erase(n, "saturate");  // how a cast to float8 rounds
  return true;
}

}  // namespace

onnx::ModelProto opset17_view(const onnx::ModelProto& model, const std::string& model_dir) {
  onnx::ModelProto view = model;
  const Constants constants(model.graph(), model_dir);
  for (auto& n : *view.mutable_graph()->mutable_node()) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (default_domain && !to_opset17(n, constants)) n.set_domain(kDeferred);
  }
  for (auto& o : *view.mutable_opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") o.set_version(kCheckerMaxOpset);
  onnx::OperatorSetIdProto* deferred = view.add_opset_import();
  deferred->set_domain(kDeferred);
  deferred->set_version(1);
  view.set_ir_version(std::min<int64_t>(view.ir_version(), onnx::Version::IR_VERSION));
  return view;
}

}  // namespace pd::io::onnx_import
