// Both programs see the same input tensors; outputs are matched by name, so a pass that reorders
// nothing but renames values still compares correctly.
#include "compare.h"

#include <fmt/format.h>

#include <cmath>

#include "pd/exec/executor.h"
#include "pd/pd.h"

namespace pd::tools {
namespace {

std::map<std::string, Tensor> random_inputs(const ir::Program& p, int64_t batch, int64_t seed) {
  std::map<std::string, Tensor> in;
  for (ir::ValueId id : p.inputs()) {
    const ir::Value& v = p.value(id);
    Shape s = v.type.shape;
    for (int64_t& d : s) d = d < 0 ? batch : d;
    Tensor t = is_floating(v.type.dtype) ? ops::cast(ops::uniform(s, -1, 1, seed++), v.type.dtype)
                                         : ops::zeros(s, v.type.dtype);
    in[v.name] = t;
  }
  return in;
}

}  // namespace

VerifyResult compare_programs(const ir::Program& before, const ir::Program& after, double rtol, double atol,
                              int64_t batch, int64_t seed) {
  auto in = random_inputs(before, batch, seed);
  std::vector<Tensor> a = exec::Executor(before).run(in);
  std::vector<Tensor> b = exec::Executor(after).run(in);
  double worst = 0;
  for (size_t i = 0; i < before.outputs().size(); ++i) {
    const std::string& name = before.output_names()[i];
    size_t j = 0;
    while (j < after.output_names().size() && after.output_names()[j] != name) ++j;
    if (j == after.output_names().size()) return {false, fmt::format("output '{}' is missing after optimisation", name)};
    if (a[i].shape() != b[j].shape() || a[i].dtype() != b[j].dtype())
      return {false, fmt::format("output '{}' is {}{} before but {}{} after", name, dtype_name(a[i].dtype()),
                                 shape_str(a[i].shape()), dtype_name(b[j].dtype()), shape_str(b[j].shape()))};
    std::vector<double> x = a[i].to_vector<double>(), y = b[j].to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) {
      const double diff = std::abs(x[k] - y[k]);
      const bool same_nan = std::isnan(x[k]) && std::isnan(y[k]);
      if (!same_nan && !(diff <= atol + rtol * std::abs(x[k])))
        return {false, fmt::format("output '{}' differs after optimisation at flat index {}: {} before, {} after "
                                   "(|diff| {:.3g} > atol {} + rtol {} * |before|)",
                                   name, k, x[k], y[k], diff, atol, rtol)};
      if (!same_nan) worst = std::max(worst, diff);
    }
  }
  return {true, fmt::format("verify: {} outputs match on random inputs (batch {}), max |diff| {:.3g}",
                            before.outputs().size(), batch, worst)};
}

}  // namespace pd::tools
