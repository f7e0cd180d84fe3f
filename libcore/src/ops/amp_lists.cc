// Which ops autocast runs in low precision and which in f32 (pd/ops/amp.h), in one place.
//
// Low precision: the products that tensor cores speed up and that accumulate in f32 anyway.
// f32: ops whose results lose too much in 8 mantissa bits (bf16) or overflow at 65504 (f16): losses,
// softmax, normalisations and their statistics, sums and means over many elements, exp / log / pow.
// The choice follows PyTorch's CUDA autocast lists (lower_precision_fp and fp32 policies).
#include <set>
#include <string>

#include "pd/ops/amp.h"

namespace pd::amp {

OpClass op_class(const std::string& op) {
  static const std::set<std::string> low = {"matmul", "linear", "fused_linear", "conv2d", "fused_conv2d",
                                            "scaled_dot_product_attention", "qkv_attention"};
  static const std::set<std::string> f32 = {
      "softmax", "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits",
      "layer_norm", "batch_norm", "batch_norm_add_relu", "sum", "mean", "var", "std", "prod", "cumsum",
      "logsumexp", "exp", "log", "pow", "rsqrt", "softplus", "sum_to"};
  if (low.count(op)) return OpClass::low;
  if (f32.count(op)) return OpClass::f32;
  return OpClass::follow;
}

}  // namespace pd::amp
