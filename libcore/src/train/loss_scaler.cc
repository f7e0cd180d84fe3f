// Dynamic loss scaling for f16 training (loss_scaler.h).
#include "pd/train/loss_scaler.h"

#include <cmath>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/tensor_inl.h"

namespace pd::train {

Tensor LossScaler::scale_loss(const Tensor& loss) const {
  if (!enabled_) return loss;
  return ops::mul(loss, Tensor::full_scalar(scale_, loss.dtype(), loss.place()));
}

bool LossScaler::unscale(const std::vector<NamedParam>& params) {
  if (!enabled_) return true;
  NoGradGuard no_grad;
  // One sum over all gradients, read back once: an Inf or NaN anywhere makes it non-finite.
  Tensor total;
  for (const NamedParam& p : params) {
    Tensor g = p.value.grad();
    if (!g.defined()) continue;
    g = ops::mul(g, Tensor::full_scalar(1.0 / scale_, g.dtype(), g.place()));
    p.value.set_grad(g);
    const Tensor s = ops::sum(ops::cast(g, DType::f64));
    total = total.defined() ? ops::add(total, s) : s;
  }
  const bool finite = !total.defined() || std::isfinite(total.item<double>());
  if (finite) {
    if (++good_steps_ == kGrowthInterval) {
      scale_ *= kGrowth;
      good_steps_ = 0;
    }
    return true;
  }
  for (const NamedParam& p : params) p.value.set_grad(Tensor());
  scale_ *= kBackoff;
  good_steps_ = 0;
  ++skipped_;
  return false;
}

std::map<std::string, std::string> LossScaler::state() const {
  if (!enabled_) return {};
  return {{"amp_loss_scale", fmt::format("{}", scale_)},
          {"amp_good_steps", std::to_string(good_steps_)},
          {"amp_skipped_steps", std::to_string(skipped_)}};
}

void LossScaler::load_state(const std::map<std::string, std::string>& metadata, const std::string& path) {
  if (!enabled_) return;
  const auto it = metadata.find("amp_loss_scale");
  if (it == metadata.end()) return;  // a checkpoint of a run without f16: start scaling afresh
  try {
    scale_ = std::stod(it->second);
    good_steps_ = std::stoll(metadata.at("amp_good_steps"));
    skipped_ = std::stoll(metadata.at("amp_skipped_steps"));
  } catch (const std::exception&) {
    raise(ErrorCode::kParse, "{}: the checkpoint's loss-scaling state is damaged (amp_loss_scale '{}')", path, it->second);
  }
  PD_CHECK(scale_ > 0 && std::isfinite(scale_), ErrorCode::kParse, "{}: the checkpoint's loss scale {} is not positive",
           path, scale_);
}

}  // namespace pd::train
