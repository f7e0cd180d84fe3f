// Network -> Program by tracing: an OpObserver records the top-level op calls of one forward pass,
// and tensors are matched to program values by their TensorImpl. The trace keeps every tensor it saw
// alive, so no impl address is reused during the pass.
#include "pd/model/export.h"

#include <fmt/format.h>

#include <unordered_map>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/ops/op_observer.h"

namespace pd::model {
namespace {

constexpr int64_t kTraceBatch = 2;

struct Call {
  std::string op;
  BoxedInputs inputs;
  AttrMap attrs;
  std::vector<Tensor> outputs;
};

// Records only depth-1 calls: ops that a layer calls directly, not the casts or helpers they call.
class Tracer : public OpObserver {
 public:
  std::vector<Call> calls;
  void begin(const char*) override { ++depth_; }
  void finish(const char*) override { --depth_; }
  bool wants_values() const override { return true; }
  void record(const char* op, const BoxedInputs& inputs, const AttrMap& attrs, const std::vector<Tensor>& outputs) override {
    if (depth_ == 1) calls.push_back({op, inputs, attrs, outputs});
  }

 private:
  int depth_ = 0;
};

// A layer that reshapes keeps the batch axis by passing the traced batch size (2) as the first extent;
// in the program that extent must follow the input, so it becomes -1 with the rest taken from the trace.
void generalize_batch(const Call& c, const ir::Program& p, ir::ValueId x, AttrMap& attrs) {
  if (c.op != "reshape" || p.value(x).type.shape.empty() || p.value(x).type.shape[0] != -1) return;
  auto& shape = std::get<std::vector<int64_t>>(attrs.at("shape"));
  if (shape.empty() || shape[0] != kTraceBatch || c.outputs[0].shape()[0] != kTraceBatch) return;
  shape = c.outputs[0].shape();
  shape[0] = -1;
}

}  // namespace

ir::Program to_program(Network& net) {
  const ModelSpec& spec = net.spec();
  ir::Program p;
  std::unordered_map<const TensorImpl*, ir::ValueId> id_of;
  std::map<std::string, Tensor> dummy;
  for (const auto& in : spec.inputs) {
    if (in.name == spec.label_input) continue;
    Shape s = {kTraceBatch}, declared = {-1};
    s.insert(s.end(), in.shape.begin(), in.shape.end());
    declared.insert(declared.end(), in.shape.begin(), in.shape.end());
    dummy[in.name] = ops::zeros(s, in.dtype);
    id_of[dummy[in.name].impl()] = p.add_input(in.name, {in.dtype, declared});
  }

  Tracer tracer;
  std::map<std::string, Tensor> values;
  {
    NoGradGuard no_grad;
    ScopedOpObserver install(&tracer);
    values = net.forward(dummy, /*training=*/false, /*step=*/0);
  }

  // Params in the network's order, only those the forward pass reads.
  std::unordered_map<const TensorImpl*, bool> read;
  for (const Call& c : tracer.calls)
    for (const auto& slot : c.inputs)
      for (const Tensor& t : slot) read[t.impl()] = true;
  for (const ParamInfo& pi : net.params())
    if (read.count(pi.value.impl()) && !id_of.count(pi.value.impl())) id_of[pi.value.impl()] = p.add_param(pi.name, pi.value);

  int constants = 0;
  for (const Call& c : tracer.calls) {
    std::vector<std::vector<ir::ValueId>> inputs;
    for (const auto& slot : c.inputs) {
      inputs.emplace_back();
      for (const Tensor& t : slot) {
        auto it = id_of.find(t.impl());
        // A tensor no traced op made (built directly by a layer) is a constant of the graph.
        if (it == id_of.end()) it = id_of.emplace(t.impl(), p.add_param(p.unique_name(fmt::format("const.{}", constants++)), t.clone())).first;
        inputs.back().push_back(it->second);
      }
    }
    AttrMap attrs = c.attrs;
    if (!inputs.empty() && !inputs[0].empty()) generalize_batch(c, p, inputs[0][0], attrs);
    std::vector<ir::ValueId> results;
    try {
      results = p.add_op(c.op, inputs, attrs);  // types inferred again with the -1 batch
    } catch (const Error& e) {
      raise(e.code(), "{}: exporting op '{}' with a batch of unknown size: {}", spec.file, c.op, e.what());
    }
    PD_CHECK(results.size() == c.outputs.size(), ErrorCode::kInternal, "export: op '{}' traced {} outputs, the program has {}",
             c.op, c.outputs.size(), results.size());
    for (size_t r = 0; r < results.size(); ++r) id_of[c.outputs[r].impl()] = results[r];
  }

  auto out = values.find(net.output_name());
  PD_CHECK(out != values.end() && id_of.count(out->second.impl()), ErrorCode::kInternal,
           "export: the network output '{}' was not traced", net.output_name());
  p.mark_output(id_of.at(out->second.impl()), net.output_name());
  ir::verify(p);
  return p;
}

}  // namespace pd::model
