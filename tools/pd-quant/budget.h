// The accuracy budget (pd-quant --max-drop): measure how much each quantized layer costs on its own
// (the model with only that layer in int8), then put the most sensitive layers back to f32 one at a
// time until the int8 model's accuracy is within the budget of the f32 model's. At least one layer stays
// int8: a model with none is not a quantized model, and the budget then counts as missed. With narrow
// weights (--weight-bits 6 or 7) the most sensitive layers first get 8-bit weights back, one at a time
// (still int8, as fast with VNNI), and only then fall back to f32.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "pd-quant/evaluate.h"
#include "pd/ir/program.h"

namespace pd::tools {

struct LayerReport {
  std::string name;  // the op's weight param: what --exclude takes
  std::string type;  // conv2d or linear
  Score alone;       // the model with only this layer quantized
  double time_share = 0;  // of the f32 model's run time
  bool int8 = true;       // false: fell back to f32
  bool full_bits = false;  // int8 with 8-bit weights (a narrow-weight budget's first fallback)
};

struct BudgetResult {
  std::vector<LayerReport> layers;  // most sensitive first
  ir::Program program;              // the quantized program that met the budget (or the last one tried)
  Score score;
  bool met = false;
};

// The f32 model with every layer but those in kept_f32 quantized, those in full_bits with 8-bit weights.
using Quantizer = std::function<ir::Program(const std::vector<std::string>& kept_f32, const std::vector<std::string>& full_bits)>;

// `layers`: the quantizable ops by weight param name (quant::quantizable_layers); `narrow`: the
// quantizer's weights have fewer than 8 bits.
BudgetResult fit_budget(const ir::Program& f32, const std::vector<std::string>& layers, const Quantizer& quantize,
                        const Evaluator& eval, double max_drop, bool narrow);

// The per-layer table --max-drop prints.
std::string format_budget_table(const BudgetResult& r, double f32_accuracy);

}  // namespace pd::tools
