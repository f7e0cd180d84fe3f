// conv2d (with its bias) followed by relu / gelu / silu / tanh / sigmoid / leaky_relu -> fused_conv2d,
// whose oneDNN kernel applies the activation as a post-op while the output is still in cache.
#include "activation_fusion.h"

namespace pd::ir::passes {

std::unique_ptr<Pass> conv_activation_fusion() {
  return std::make_unique<ActivationFusion>("conv_act_fuse", "conv2d", "fused_conv2d");
}

}  // namespace pd::ir::passes
