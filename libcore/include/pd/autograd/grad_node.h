// GradNode: one recorded op in the autograd tape. Generated subclasses (build/generated/grad_nodes.h)
// implement apply() as the op's backward formula from ops.yaml.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "pd/core/tensor.h"

namespace pd {

class GradNode;

// Where a gradient goes next: input slot `input_nr` of `node`.
struct Edge {
  std::shared_ptr<GradNode> node;
  int input_nr = 0;
  bool valid() const { return node != nullptr; }
};

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                          // leaves only
  std::shared_ptr<GradNode> grad_fn;    // null for leaves
  int output_nr = 0;
  std::shared_ptr<GradNode> accumulator;  // leaves: the AccumulateGrad node, created on first use
  std::vector<std::function<Tensor(const Tensor&)>> hooks;
};

class GradNode : public std::enable_shared_from_this<GradNode> {
 public:
  virtual ~GradNode() = default;
  // grads[i] is the gradient of output i (undefined if none reached it). Returns one gradient per
  // next edge (undefined where the input needs none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual std::string name() const = 0;

  std::vector<Edge> next_edges;  // one per differentiable input of the op
  int num_outputs = 1;
  // Hooks on output slots, registered through Tensor::register_hook on non-leaf tensors.
  std::vector<std::pair<int, std::function<Tensor(const Tensor&)>>> pre_hooks;

  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }
};

// A tensor saved for backward. Outputs of the node that saves them are kept without their grad_fn
// (it would be a reference cycle) and re-attached on unpack, so higher-order gradients still flow.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output_of_saver, int output_nr = 0);
  Tensor unpack(const std::shared_ptr<GradNode>& saver) const;
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  bool is_output_ = false;
  int output_nr_ = 0;
  bool requires_grad_ = false;
};

}  // namespace pd
