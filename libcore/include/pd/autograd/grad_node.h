// What autograd keeps beyond the node interface (pd/core/autograd_meta.h): tensors saved for backward.
// Generated GradNode subclasses (build/generated/grad_nodes.h) implement apply() as the op's backward
// formula from ops.yaml.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "pd/core/autograd_meta.h"
#include "pd/core/tensor.h"

namespace pd {

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
