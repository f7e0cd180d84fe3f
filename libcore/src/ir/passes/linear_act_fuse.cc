// linear (with its bias) followed by an activation -> fused_linear (matmul primitive + eltwise post-op).
#include "activation_fusion.h"

namespace pd::ir::passes {

std::unique_ptr<Pass> linear_activation_fusion() {
  return std::make_unique<ActivationFusion>("linear_act_fuse", "linear", "fused_linear");
}

}  // namespace pd::ir::passes
