// The autograd state a Tensor carries (requires_grad, .grad, the node that made it, hooks) and the
// GradNode interface it points to. They live in core because Tensor's own methods read them; the tape,
// the engine and the generated nodes are in pd/autograd.
#pragma once
#include "pd/core/place.h"
#include <functional>
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
  // Leaves: run once .grad holds this backward pass's whole gradient (data-parallel reducers start
  // their allreduce here, while backward goes on).
  std::vector<std::function<void()>> post_accumulate_hooks;
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
  Place place;  // where the op ran: literals and missing gradients of its backward are made there
  // Hooks on output slots, registered through Tensor::register_hook on non-leaf tensors.
  std::vector<std::pair<int, std::function<Tensor(const Tensor&)>>> pre_hooks;

  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }
};

}  // namespace pd
