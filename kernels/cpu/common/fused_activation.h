// The activation a fused op applies after its conv / linear (fused_conv2d, fused_linear). Both the
// reference and the oneDNN kernels parse the `activation` attribute here so that they accept and
// reject exactly the same names.
#pragma once
#include <string>

#include "pd/core/error.h"

namespace pd::kernels::cpu {

enum class FusedAct { none, relu, gelu, silu, tanh, sigmoid, leaky_relu };

inline FusedAct parse_fused_activation(const char* op, const std::string& name) {
  static constexpr const char* kNames[] = {"none", "relu", "gelu", "silu", "tanh", "sigmoid", "leaky_relu"};
  for (int i = 0; i < 7; ++i)
    if (name == kNames[i]) return static_cast<FusedAct>(i);
  raise(ErrorCode::kInvalidArgument,
        "{}: argument 'activation' must be one of none, relu, gelu, silu, tanh, sigmoid, leaky_relu, but received '{}'", op,
        name);
}

}  // namespace pd::kernels::cpu
