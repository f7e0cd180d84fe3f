// The backward engine: counts dependencies from the roots, then runs each GradNode once all
// gradients flowing into it have been summed.
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "op_api.h"
#include "pd/autograd/autograd.h"

namespace pd {
namespace {

thread_local bool g_grad_enabled = true;
thread_local bool g_creating_graph = false;
bool g_use_fused = true;

// Adds the gradient of a leaf into its .grad().
class AccumulateGrad final : public GradNode {
 public:
  explicit AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf) : leaf_(leaf) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    auto leaf = leaf_.lock();
    if (!leaf || !grads[0].defined()) return {};
    Tensor g = grads[0];
    for (auto& hook : leaf->autograd->hooks) {
      Tensor r = hook(g);
      if (r.defined()) g = r;
    }
    if (!creating_graph()) g = g.detach();
    Tensor& acc = leaf->autograd->grad;
    acc = acc.defined() ? ops::add(acc, g) : g;
    // Every gradient reaching this leaf has been summed before this node ran (the engine counts them).
    for (auto& hook : leaf->autograd->post_accumulate_hooks) hook();
    return {};
  }
  std::string name() const override { return "AccumulateGrad"; }

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

struct Run {
  std::unordered_map<GradNode*, int> deps;
  std::unordered_map<GradNode*, std::vector<Tensor>> buffers;
  std::unordered_map<GradNode*, bool> needed;  // grad(): does this node lead to a requested input?
};

void add_into(std::vector<Tensor>& buf, int slot, const Tensor& g) {
  if (!g.defined()) return;
  if (static_cast<int>(buf.size()) <= slot) buf.resize(slot + 1);
  buf[slot] = buf[slot].defined() ? ops::add(buf[slot], g) : g;
}

void count_deps(const std::vector<Edge>& roots, Run& run) {
  std::vector<GradNode*> stack;
  std::unordered_set<GradNode*> seen;
  for (const auto& e : roots)
    if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  while (!stack.empty()) {
    GradNode* n = stack.back();
    stack.pop_back();
    for (const auto& e : n->next_edges) {
      if (!e.valid()) continue;
      ++run.deps[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
}

bool mark_needed(GradNode* n, const std::unordered_set<GradNode*>& targets, Run& run) {
  auto it = run.needed.find(n);
  if (it != run.needed.end()) return it->second;
  run.needed[n] = false;  // cycles cannot happen; this also memoizes
  bool need = targets.count(n) > 0;
  for (const auto& e : n->next_edges)
    if (e.valid()) need = mark_needed(e.node.get(), targets, run) || need;
  run.needed[n] = need;
  return need;
}

// Runs the graph from `roots`. With `captures` (grad()), stops at the captured slots instead of
// accumulating into leaves.
void execute(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads, bool create_graph,
             const std::vector<Edge>* captures, std::vector<Tensor>* captured) {
  Run run;
  count_deps(roots, run);
  std::unordered_set<GradNode*> targets;
  if (captures) {
    for (const auto& e : *captures)
      if (e.valid()) targets.insert(e.node.get());
    for (const auto& e : roots)
      if (e.valid()) mark_needed(e.node.get(), targets, run);
  }
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].valid()) add_into(run.buffers[roots[i].node.get()], roots[i].input_nr, root_grads[i]);

  bool prev_mode = g_grad_enabled, prev_creating = g_creating_graph;
  g_grad_enabled = create_graph;
  g_creating_graph = create_graph;
  struct Restore {
    bool m, c;
    ~Restore() {
      g_grad_enabled = m;
      g_creating_graph = c;
    }
  } restore{prev_mode, prev_creating};

  std::deque<std::shared_ptr<GradNode>> ready;
  std::unordered_set<GradNode*> queued;
  for (const auto& e : roots)
    if (e.valid() && run.deps[e.node.get()] == 0 && queued.insert(e.node.get()).second) ready.push_back(e.node);
  while (!ready.empty()) {
    std::shared_ptr<GradNode> node = ready.front();
    ready.pop_front();
    std::vector<Tensor> grads = std::move(run.buffers[node.get()]);
    run.buffers.erase(node.get());
    grads.resize(std::max<size_t>(grads.size(), static_cast<size_t>(node->num_outputs)));
    for (auto& [slot, hook] : node->pre_hooks)
      if (grads[slot].defined()) {
        Tensor r = hook(grads[slot]);
        if (r.defined()) grads[slot] = r;
      }
    if (captures)
      for (size_t i = 0; i < captures->size(); ++i)
        if ((*captures)[i].node == node) {
          const Tensor& g = grads[(*captures)[i].input_nr];
          if (g.defined()) (*captured)[i] = (*captured)[i].defined() ? ops::add((*captured)[i], g) : g;
        }
    bool skip = captures && (!run.needed[node.get()] || dynamic_cast<AccumulateGrad*>(node.get()) != nullptr);
    std::vector<Tensor> outs;
    if (!skip) outs = node->apply(std::move(grads));
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      if (i < outs.size()) add_into(run.buffers[e.node.get()], e.input_nr, outs[i]);
      if (--run.deps[e.node.get()] == 0) ready.push_back(e.node);
    }
  }
}

std::vector<Tensor> default_root_grads(const std::vector<Tensor>& roots, const std::vector<Tensor>& given) {
  PD_CHECK(given.empty() || given.size() == roots.size(), ErrorCode::kInvalidArgument,
           "backward: got {} gradients for {} outputs", given.size(), roots.size());
  std::vector<Tensor> out;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!given.empty() && given[i].defined()) {
      PD_CHECK(given[i].shape() == roots[i].shape(), ErrorCode::kShape,
               "backward: gradient {} has shape {} but its output has shape {}", i, shape_str(given[i].shape()),
               shape_str(roots[i].shape()));
      out.push_back(given[i]);
      continue;
    }
    PD_CHECK(roots[i].numel() == 1, ErrorCode::kInvalidArgument,
             "backward: output {} has shape {}; a gradient can be implied only for one-element outputs, so pass grad_roots",
             i, shape_str(roots[i].shape()));
    out.push_back(ops::ones(roots[i].shape(), roots[i].dtype()).to(roots[i].place()));
  }
  return out;
}

}  // namespace

bool GradMode::enabled() { return g_grad_enabled; }
void GradMode::set_enabled(bool enabled) { g_grad_enabled = enabled; }
void set_use_fused_grad_kernels(bool enabled) { g_use_fused = enabled; }
bool use_fused_grad_kernels() { return g_use_fused; }
bool creating_graph() { return g_creating_graph; }

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.impl()->autograd) return {};
  AutogradMeta& m = *t.impl()->autograd;
  if (m.grad_fn) return {m.grad_fn, m.output_nr};
  if (!m.requires_grad) return {};
  if (!m.accumulator) m.accumulator = std::make_shared<AccumulateGrad>(t.impl_ptr());
  return {m.accumulator, 0};
}

void set_history(const Tensor& out, const std::shared_ptr<GradNode>& node, int output_nr) {
  if (!out.impl()->autograd) out.impl()->autograd = std::make_shared<AutogradMeta>();
  AutogradMeta& m = *out.impl()->autograd;
  m.requires_grad = true;
  m.grad_fn = node;
  m.output_nr = output_nr;
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    if (t->requires_grad()) return true;
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, bool create_graph) {
  std::vector<Edge> edges;
  for (const auto& r : roots) {
    PD_CHECK(r.requires_grad(), ErrorCode::kInvalidArgument,
             "backward: the output does not require grad (no input of it has requires_grad set, or it was computed under "
             "NoGradGuard)");
    edges.push_back(gradient_edge(r));
  }
  execute(edges, default_root_grads(roots, grad_roots), create_graph, nullptr, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool create_graph, bool allow_unused) {
  std::vector<Edge> roots, captures;
  for (const auto& o : outputs) {
    PD_CHECK(o.requires_grad(), ErrorCode::kInvalidArgument, "grad: an output does not require grad");
    roots.push_back(gradient_edge(o));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    PD_CHECK(inputs[i].requires_grad(), ErrorCode::kInvalidArgument, "grad: input {} does not require grad", i);
    captures.push_back(gradient_edge(inputs[i]));
  }
  std::vector<Tensor> result(inputs.size());
  execute(roots, default_root_grads(outputs, grad_outputs), create_graph, &captures, &result);
  for (size_t i = 0; i < result.size(); ++i) {
    PD_CHECK(allow_unused || result[i].defined(), ErrorCode::kInvalidArgument,
             "grad: input {} was not used to compute the outputs", i);
    if (result[i].defined() && !create_graph) result[i] = result[i].detach();
  }
  return result;
}

SavedTensor::SavedTensor(const Tensor& t, bool is_output_of_saver, int output_nr)
    : data_(is_output_of_saver ? t.detach() : t), is_output_(is_output_of_saver), output_nr_(output_nr),
      requires_grad_(t.requires_grad()) {}

Tensor SavedTensor::unpack(const std::shared_ptr<GradNode>& saver) const {
  if (!is_output_ || !requires_grad_) return data_;
  Tensor t = data_.detach();
  set_history(t, saver, output_nr_);
  return t;
}

}  // namespace pd
