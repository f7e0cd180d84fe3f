// pd-train --check-nan-inf (check_nan_inf: true in the recipe), like Paddle's FLAGS_check_nan_inf:
// every op's floating-point outputs are checked as it returns, and the first op that turns finite
// inputs into NaN or Inf stops the run with a pd::Error naming it. Raised inside a layer's forward,
// the network adds the layer's name and YAML position (Network::forward). Costs a host copy of every
// output, so it is for finding a divergence, not for every run.
#pragma once
#include <string>

#include "pd/ops/op_observer.h"

namespace pd::train {

class NonFiniteCheck : public OpObserver {
 public:
  // Where the run is ("step 12 (epoch 1, batch 12), forward"), named in the error.
  void set_where(std::string where) { where_ = std::move(where); }
  bool wants_values() const override { return true; }
  void record(const char* op, const BoxedInputs& inputs, const AttrMap& attrs, const std::vector<Tensor>& outputs) override;

 private:
  std::string where_;
};

// The first non-finite value of a floating-point tensor, as "nan at [2, 7]"; "" when all are finite.
std::string first_non_finite(const Tensor& t);

}  // namespace pd::train
