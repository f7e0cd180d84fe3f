#include "pd-quant/budget.h"

#include <fmt/format.h>

#include <algorithm>

namespace pd::tools {

BudgetResult fit_budget(const ir::Program& f32, const std::vector<std::string>& layers, const Quantizer& quantize,
                        const Evaluator& eval, double max_drop, bool narrow) {
  BudgetResult r;
  const std::vector<double> shares = eval.f32_time_shares();
  for (const std::string& name : layers) {
    LayerReport l{name, "", {}, 0, true};
    const ir::ValueId w = f32.find(name);
    for (size_t k = 0; k < f32.ops().size(); ++k)
      if (f32.ops()[k].inputs.size() > 1 && !f32.ops()[k].inputs[1].empty() && f32.ops()[k].inputs[1][0] == w)
        l.type = f32.ops()[k].type, l.time_share += shares[k];
    r.layers.push_back(l);
  }
  for (LayerReport& l : r.layers) {
    std::vector<std::string> others;
    for (const std::string& n : layers)
      if (n != l.name) others.push_back(n);
    l.alone = eval.score(quantize(others, {}), "with only " + l.name + " in int8");
  }
  // Most sensitive first: the largest accuracy loss alone, then the largest output error.
  std::stable_sort(r.layers.begin(), r.layers.end(), [](const LayerReport& a, const LayerReport& b) {
    if (a.alone.accuracy != b.alone.accuracy) return a.alone.accuracy < b.alone.accuracy;
    return a.alone.output_error > b.alone.output_error;
  });

  // The steps, most sensitive layer first: narrow weights back to 8 bits (each layer), then to f32 (all
  // but the last layer).
  std::vector<std::string> fell_back, full_bits;
  const size_t to_full = narrow ? r.layers.size() : 0, steps = to_full + r.layers.size() - 1;
  for (size_t k = 0;; ++k) {
    r.program = quantize(fell_back, full_bits);
    r.score = eval.score(r.program, fmt::format("with {} layer(s) in f32, {} at 8 bits", fell_back.size(), full_bits.size()));
    r.met = eval.f32_accuracy() - r.score.accuracy <= max_drop;
    if (r.met || k >= steps) break;
    if (k < to_full) {
      r.layers[k].full_bits = true;
      full_bits.push_back(r.layers[k].name);
    } else {
      r.layers[k - to_full].int8 = false;
      fell_back.push_back(r.layers[k - to_full].name);
    }
  }
  return r;
}

std::string format_budget_table(const BudgetResult& r, double f32_accuracy) {
  std::string s = fmt::format("{:<28} {:<8} {:>9} {:>8} {:>11} {:>9}  {}\n", "layer weight (alone int8)", "type", "accuracy",
                              "vs f32", "output err", "f32 time", "kept");
  for (const LayerReport& l : r.layers)
    s += fmt::format("{:<28} {:<8} {:>9.4f} {:>+8.4f} {:>11.3g} {:>8.1f}%  {}\n", l.name, l.type, l.alone.accuracy,
                     l.alone.accuracy - f32_accuracy, l.alone.output_error, 100 * l.time_share,
                     !l.int8 ? "f32 (fell back)" : l.full_bits ? "int8 at 8 bits" : "int8");
  return s;
}

}  // namespace pd::tools
