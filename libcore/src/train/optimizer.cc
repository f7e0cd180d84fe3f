// Optimizers. Each parameter's update is one in-place op (sgd_step, momentum_step, adam_step in
// ops.yaml): no autograd is recorded and no temporaries are allocated, and the update runs on
// whatever backend holds the parameter.
#include "pd/train/optimizer.h"

#include <cmath>
#include <cstring>
#include <set>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/tensor_inl.h"

namespace pd::train {
namespace {

const char* kind_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::SGD: return "SGD";
    case OptimizerKind::Momentum: return "Momentum";
    case OptimizerKind::Adam: return "Adam";
    case OptimizerKind::AdamW: return "AdamW";
  }
  return "?";
}

bool uses_m(OptimizerKind k) { return k != OptimizerKind::SGD; }
bool uses_v(OptimizerKind k) { return k == OptimizerKind::Adam || k == OptimizerKind::AdamW; }

// The gradient as a contiguous tensor of the parameter's dtype and shape; accumulated grads can be
// broadcast views (zero strides) or, in principle, another dtype.
Tensor dense_grad(const NamedParam& p, const Tensor& g) {
  PD_CHECK(g.shape() == p.value.shape(), ErrorCode::kShape,
           "Optimizer::step: gradient of parameter '{}' has shape {}, but the parameter has shape {}", p.name,
           shape_str(g.shape()), shape_str(p.value.shape()));
  PD_CHECK(g.place() == p.value.place(), ErrorCode::kInvalidArgument,
           "Optimizer::step: gradient of parameter '{}' is on {}, but the parameter is on {}", p.name, g.place().str(),
           p.value.place().str());
  Tensor d = g.dtype() == p.value.dtype() ? g : ops::cast(g, p.value.dtype());
  return d.contiguous();
}

}  // namespace

Optimizer::Optimizer(std::vector<NamedParam> params, OptimizerConfig config, std::vector<bool> owned)
    : params_(std::move(params)), config_(config), owned_(std::move(owned)) {
  PD_CHECK(owned_.empty() || owned_.size() == params_.size(), ErrorCode::kInvalidArgument,
           "Optimizer: {} ownership flags for {} parameters", owned_.size(), params_.size());
  PD_CHECK(config_.weight_decay >= 0, ErrorCode::kInvalidArgument,
           "Optimizer: weight_decay must be >= 0, but received {}", config_.weight_decay);
  if (config_.kind == OptimizerKind::Momentum)
    PD_CHECK(config_.momentum >= 0, ErrorCode::kInvalidArgument,
             "Optimizer: momentum must be >= 0, but received {}", config_.momentum);
  if (uses_v(config_.kind)) {
    PD_CHECK(config_.beta1 >= 0 && config_.beta1 < 1 && config_.beta2 >= 0 && config_.beta2 < 1,
             ErrorCode::kInvalidArgument, "Optimizer: {} needs betas in [0, 1), but received ({}, {})",
             kind_name(config_.kind), config_.beta1, config_.beta2);
    PD_CHECK(config_.eps >= 0, ErrorCode::kInvalidArgument, "Optimizer: eps must be >= 0, but received {}",
             config_.eps);
  }
  std::set<std::string> names;
  std::set<const TensorImpl*> tensors;
  for (const NamedParam& p : params_) {
    PD_CHECK(names.insert(p.name).second, ErrorCode::kInvalidArgument,
             "Optimizer: parameter name '{}' appears twice (state keys must be unique)", p.name);
    PD_CHECK(p.value.defined(), ErrorCode::kInvalidArgument, "Optimizer: parameter '{}' is undefined", p.name);
    // The same tensor listed twice would be updated twice per step.
    PD_CHECK(tensors.insert(p.value.impl()).second, ErrorCode::kInvalidArgument,
             "Optimizer: parameter '{}' is a tensor already listed under another name", p.name);
    PD_CHECK(p.value.dtype() == DType::f32 || p.value.dtype() == DType::f64, ErrorCode::kDType,
             "Optimizer: parameter '{}' must be f32 or f64, but has dtype {}", p.name, dtype_name(p.value.dtype()));
    PD_CHECK(p.value.place() == params_[0].value.place(), ErrorCode::kInvalidArgument,
             "Optimizer: parameter '{}' is on {}, but '{}' is on {}; move the model to one place first", p.name,
             p.value.place().str(), params_[0].name, params_[0].value.place().str());
    // The in-place loops index storage linearly, so a strided view would update the wrong elements.
    PD_CHECK(p.value.is_contiguous(), ErrorCode::kInvalidArgument,
             "Optimizer: parameter '{}' (shape {}) must be contiguous; pass the leaf tensor, not a view", p.name,
             shape_str(p.value.shape()));
    const bool own = owns(m_.size());
    m_.push_back(own && uses_m(config_.kind) ? ops::zeros(p.value.shape(), p.value.dtype()).to(p.value.place()) : Tensor());
    v_.push_back(own && uses_v(config_.kind) ? ops::zeros(p.value.shape(), p.value.dtype()).to(p.value.place()) : Tensor());
  }
}

void Optimizer::step(double lr) {
  PD_CHECK(std::isfinite(lr) && lr >= 0, ErrorCode::kInvalidArgument,
           "Optimizer::step: lr must be finite and >= 0, but received {}", lr);
  NoGradGuard no_grad;
  // Check every gradient before touching any parameter, so that an error leaves the model unchanged.
  std::vector<Tensor> grads(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = params_[i].value.grad();
    if (g.defined() && owns(i)) grads[i] = dense_grad(params_[i], g);
  }
  ++steps_;
  const OptimizerConfig& c = config_;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!grads[i].defined()) continue;
    const Tensor& p = params_[i].value;
    switch (c.kind) {
      case OptimizerKind::SGD: ops::sgd_step(p, grads[i], lr, c.weight_decay); break;
      case OptimizerKind::Momentum: ops::momentum_step(p, grads[i], m_[i], lr, c.momentum, c.nesterov, c.weight_decay); break;
      case OptimizerKind::Adam:
      case OptimizerKind::AdamW:
        ops::adam_step(p, grads[i], m_[i], v_[i], lr, steps_, c.beta1, c.beta2, c.eps, c.weight_decay,
                       c.kind == OptimizerKind::AdamW);
        break;
    }
  }
  zero_grad();
}

void Optimizer::zero_grad() {
  for (NamedParam& p : params_) p.value.zero_grad();
}

std::map<std::string, Tensor> Optimizer::state(bool copies) const {
  std::map<std::string, Tensor> out;
  out["step"] = Tensor::scalar<int64_t>(steps_);
  for (size_t i = 0; i < params_.size(); ++i) {
    // Copies, so that a saved snapshot does not change under later steps.
    if (m_[i].defined()) out[params_[i].name + ".m"] = copies ? m_[i].clone() : m_[i];
    if (v_[i].defined()) out[params_[i].name + ".v"] = copies ? v_[i].clone() : v_[i];
  }
  return out;
}

std::vector<std::string> Optimizer::state_suffixes() const {
  std::vector<std::string> out;
  if (uses_m(config_.kind)) out.push_back("m");
  if (uses_v(config_.kind)) out.push_back("v");
  return out;
}

int64_t Optimizer::state_bytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (m_[i].defined()) bytes += m_[i].numel() * static_cast<int64_t>(dtype_size(m_[i].dtype()));
    if (v_[i].defined()) bytes += v_[i].numel() * static_cast<int64_t>(dtype_size(v_[i].dtype()));
  }
  return bytes;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& state) {
  // Validate everything first: a half-loaded state would silently corrupt training.
  std::set<std::string> expected{"step"};
  auto check = [&](const std::string& key, const Tensor& like) {
    expected.insert(key);
    auto it = state.find(key);
    PD_CHECK(it != state.end(), ErrorCode::kInvalidArgument,
             "Optimizer::load_state: missing key '{}' ({} state)", key, kind_name(config_.kind));
    const Tensor& t = it->second;
    PD_CHECK(t.defined(), ErrorCode::kInvalidArgument, "Optimizer::load_state: key '{}' is undefined", key);
    PD_CHECK(t.shape() == like.shape(), ErrorCode::kShape,
             "Optimizer::load_state: key '{}' has shape {}, expected {}", key, shape_str(t.shape()),
             shape_str(like.shape()));
    PD_CHECK(t.dtype() == like.dtype(), ErrorCode::kDType, "Optimizer::load_state: key '{}' has dtype {}, expected {}",
             key, dtype_name(t.dtype()), dtype_name(like.dtype()));
    PD_CHECK(t.place().is_cpu(), ErrorCode::kInvalidArgument, "Optimizer::load_state: key '{}' is on {}, expected cpu",
             key, t.place().str());
  };
  const Tensor step_like = Tensor::scalar<int64_t>(0);
  check("step", step_like);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (m_[i].defined()) check(params_[i].name + ".m", m_[i]);
    if (v_[i].defined()) check(params_[i].name + ".v", v_[i]);
    if (!owns(i)) {  // another rank's shard: its entries may be there, and are left to that rank
      if (uses_m(config_.kind)) expected.insert(params_[i].name + ".m");
      if (uses_v(config_.kind)) expected.insert(params_[i].name + ".v");
    }
  }
  for (const auto& [key, t] : state)
    PD_CHECK(expected.count(key), ErrorCode::kInvalidArgument,
             "Optimizer::load_state: unexpected key '{}' (is the state from another optimizer kind or model?)", key);
  const int64_t steps = state.at("step").item<int64_t>();
  PD_CHECK(steps >= 0, ErrorCode::kInvalidArgument, "Optimizer::load_state: 'step' is negative ({})", steps);

  auto copy_into = [&](Tensor& dst, const std::string& key) { dst.copy_(state.at(key)); };
  for (size_t i = 0; i < params_.size(); ++i) {
    if (m_[i].defined()) copy_into(m_[i], params_[i].name + ".m");
    if (v_[i].defined()) copy_into(v_[i], params_[i].name + ".v");
  }
  steps_ = steps;
}

}  // namespace pd::train
