// Factories of the built-in passes, one per file in this folder; pass_manager.cc lists them.
#pragma once
#include <memory>

#include "pd/ir/pass.h"

namespace pd::ir::passes {

std::unique_ptr<Pass> dead_code_elimination();
std::unique_ptr<Pass> identity_elimination();
std::unique_ptr<Pass> common_subexpression_elimination();
std::unique_ptr<Pass> constant_folding();
std::unique_ptr<Pass> batch_norm_folding();
std::unique_ptr<Pass> conv_residual_fusion();
std::unique_ptr<Pass> conv_activation_fusion();
std::unique_ptr<Pass> int8_lowering();
std::unique_ptr<Pass> int8_channels_last();
std::unique_ptr<Pass> weight_only_lowering();
std::unique_ptr<Pass> conv_pool_fusion();
std::unique_ptr<Pass> channel_blocking();
std::unique_ptr<Pass> conv_winograd();
std::unique_ptr<Pass> global_pool_fusion();
std::unique_ptr<Pass> linear_residual_fusion();
std::unique_ptr<Pass> linear_activation_fusion();
std::unique_ptr<Pass> elementwise_fusion();
std::unique_ptr<Pass> attention_fusion();
std::unique_ptr<Pass> layer_norm_fusion();
std::unique_ptr<Pass> gelu_fusion();
std::unique_ptr<Pass> clip_relu6();
std::unique_ptr<Pass> conv_tap_trim();
std::unique_ptr<Pass> swish_fusion();
std::unique_ptr<Pass> linear_bias_fusion();
std::unique_ptr<Pass> attention_qkv_fusion();

}  // namespace pd::ir::passes
