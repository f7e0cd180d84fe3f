// Post-training quantization of a Program in the QDQ form (as onnxruntime and TensorRT read it): the
// activation input of every conv2d and linear gets a quantize_linear / dequantize_linear pair with
// calibrated u8 (or i8) parameters, and its weight is stored as an s8 param with per-channel scales and
// a dequantize_linear in front. The program still computes in f32, as int8 kernels would up to rounding;
// an int8 lowering pass turns the pairs into int8 kernels.
//
//   auto observers = pd::quant::calibrate(program, batches);           // runs the model on each batch
//   pd::quant::insert_qdq(program, observers, {.method = pd::quant::Method::percentile});
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "pd/ir/program.h"
#include "pd/quant/calibration.h"

namespace pd::quant {

struct QdqOptions {
  Method method = Method::percentile;
  double percentile = 99.99;
  DType activations = DType::u8;  // u8 (asymmetric) or i8 (symmetric)
  bool per_channel = true;        // weights: symmetric s8 per output channel, else one scale per weight
  // Weights in [-(2^(b-1) - 1), 2^(b-1) - 1]: 8 bits, 7 (onnxruntime's reduce_range: exact on CPUs without
  // VNNI too) or 6 (AVX2 without VNNI then sums 8 products a vpmaddwd: faster, less precise weights).
  int weight_bits = 8;
  // Layers whose weights keep 8 bits whatever weight_bits says, named as `exclude` names them
  // (pd-quant --max-drop's first fallback for narrow weights).
  std::vector<std::string> full_bits = {};
  // Ops left in f32: an op matches by its type, its output value's name, or its weight param's name or
  // a dotted prefix of it ("b1_conv1" and "b1_conv1.weight" both name "b1_conv1.weight.bn_folded").
  std::vector<std::string> exclude;
};

// The values quantized: the activation input of each conv2d / linear whose weight is an f32 param and
// that `exclude` (QdqOptions::exclude) does not name, and the residual operand of each add that
// conv_residual_fuse folds into such a conv2d (read in int8 by the int8 convolution).
std::vector<std::string> quantizable_inputs(const ir::Program& p, const std::vector<std::string>& exclude = {});

// The quantizable ops themselves (those insert_qdq, or with `weight_only` insert_weight_only, would
// quantize), by their weight param's name (which `exclude` takes), in program order.
std::vector<std::string> quantizable_layers(const ir::Program& p, const std::vector<std::string>& exclude = {},
                                            bool weight_only = false);

// The entries of `exclude` that name no op insert_qdq (or with `weight_only` insert_weight_only) could
// quantize: a misspelt name would otherwise leave the layer in int8 without a word.
std::vector<std::string> unmatched_excludes(const ir::Program& p, const std::vector<std::string>& exclude, bool weight_only = false);

// Runs `p` on every batch (inputs by name) and observes each quantizable input; `on_batch`, when set,
// is called after each batch (progress).
std::map<std::string, Observer> calibrate(const ir::Program& p, const std::vector<std::map<std::string, Tensor>>& batches,
                                          const std::vector<std::string>& exclude = {},
                                          const std::function<void()>& on_batch = {});

// Inserts the Q/DQ pairs and quantizes the weights (see above); throws pd::Error when an input has no
// observer or observed no finite value. Returns the number of ops quantized.
int64_t insert_qdq(ir::Program& p, const std::map<std::string, Observer>& observers, const QdqOptions& options = {});

// Weight-only quantization (pd-quant --weight-only): the weights of linear ops, and of matmuls by a
// 2-D param, become s8 params per output channel with a dequantize_linear in front; activations stay
// f32, so nothing is calibrated. The weight_only_lower pass turns the pairs into weight_only_linear.
// Honours per_channel, weight_bits and exclude. Returns the number of ops whose weight was quantized.
int64_t insert_weight_only(ir::Program& p, const QdqOptions& options = {});

}  // namespace pd::quant
