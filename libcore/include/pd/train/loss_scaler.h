// Dynamic loss scaling for f16 mixed precision, with PyTorch's GradScaler defaults: the loss is
// multiplied by the scale (2^16 at the start) before backward so that small gradients survive f16;
// the gradients are divided by it before clipping and the optimizer step. A step whose gradients hold
// an Inf or NaN is skipped and the scale halved; after 2000 good steps in a row the scale doubles.
// bf16 has f32's exponent range and needs none of this (the scaler is then off and changes nothing).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/train/optimizer.h"

namespace pd::train {

class LossScaler {
 public:
  explicit LossScaler(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  double scale() const { return enabled_ ? scale_ : 1.0; }  // what the loss is multiplied by
  int64_t skipped_steps() const { return skipped_; }

  // loss * scale (the loss itself when off).
  Tensor scale_loss(const Tensor& loss) const;
  // Divides every gradient by the scale and updates it. False when a gradient was not finite: the
  // gradients are then cleared, and the caller skips the optimizer step.
  bool unscale(const std::vector<NamedParam>& params);

  // The state a checkpoint keeps (metadata strings), so that a resumed run scales as an uninterrupted one.
  std::map<std::string, std::string> state() const;
  void load_state(const std::map<std::string, std::string>& metadata, const std::string& path);

 private:
  static constexpr double kInitialScale = 65536.0, kGrowth = 2.0, kBackoff = 0.5;
  static constexpr int64_t kGrowthInterval = 2000;
  bool enabled_;
  double scale_ = kInitialScale;
  int64_t good_steps_ = 0, skipped_ = 0;
};

}  // namespace pd::train
