// Reverse-mode autodiff over the GradNode tape.
//
//   pd::backward(loss);                                   // leaves' .grad() accumulate
//   auto g = pd::grad({y}, {x}, {}, /*create_graph=*/true); // d y / d x, itself differentiable
//   { pd::NoGradGuard no_grad; w = pd::ops::sub(w, step); }  // nothing recorded
#pragma once
#include <vector>

#include "pd/autograd/grad_node.h"

namespace pd {

// Thread-local switch for recording.
class GradMode {
 public:
  static bool enabled();
  static void set_enabled(bool enabled);
};

class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// Whether backward rules use the fused grad kernels ops.yaml offers (default on). Formulas are always
// used when create_graph is true, so that gradients stay differentiable.
void set_use_fused_grad_kernels(bool enabled);
bool use_fused_grad_kernels();
// True while running a backward pass with create_graph.
bool creating_graph();

// Accumulates d(sum(roots * grad_roots))/d(leaf) into every leaf's .grad(). A missing grad_root
// must belong to a one-element root and defaults to 1.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots = {},
              bool create_graph = false);
inline void backward(const Tensor& root) { backward(std::vector<Tensor>{root}); }

// Returns d(sum(outputs * grad_outputs))/d(inputs) without touching .grad(). An input the outputs do
// not depend on gets an undefined tensor unless allow_unused is false (then it is an error).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool create_graph = false,
                         bool allow_unused = true);

// Used by the generated op API: does any of these inputs need a gradient right now?
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
bool any_requires_grad(const std::vector<Tensor>& inputs);
// The edge a gradient for `t` must flow into (invalid if t needs no gradient).
Edge gradient_edge(const Tensor& t);
// Marks `out` as output `output_nr` of `node`.
void set_history(const Tensor& out, const std::shared_ptr<GradNode>& node, int output_nr);

}  // namespace pd
