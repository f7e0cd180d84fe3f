// The activation a fused op applies after its conv / linear (fused_conv2d, fused_linear). The shape
// rules and both the reference and the oneDNN kernels parse the `activation` attribute here, so that a
// bad name is refused when the op is built (or a program is verified) and every kernel accepts the
// same names.
#pragma once
#include <string>

#include "pd/core/error.h"

namespace pd {

enum class FusedAct { none, relu, gelu, silu, tanh, sigmoid, leaky_relu };

inline FusedAct parse_fused_activation(const char* op, const std::string& name) {
  static constexpr const char* kNames[] = {"none", "relu", "gelu", "silu", "tanh", "sigmoid", "leaky_relu"};
  for (int i = 0; i < 7; ++i)
    if (name == kNames[i]) return static_cast<FusedAct>(i);
  raise(ErrorCode::kInvalidArgument,
        "{}: argument 'activation' must be one of none, relu, gelu, silu, tanh, sigmoid, leaky_relu, but received '{}'", op,
        name);
}

}  // namespace pd
