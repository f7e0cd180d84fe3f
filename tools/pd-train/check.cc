#include "check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace pd::tools {

void print_layer_table(const model::ModelSpec& spec, model::Network& net) {
  size_t wn = 5, wt = 4, ws = 12;
  for (const auto& r : net.summary()) {
    wn = std::max(wn, r.name.size());
    wt = std::max(wt, r.type.size());
    ws = std::max(ws, r.output_shape.size());
  }
  fmt::print("{}: {}\n", spec.file, spec.name);
  for (const auto& in : spec.inputs) fmt::print("  input {} [N{}{}] {}\n", in.name, in.shape.empty() ? "" : ", ", fmt::join(in.shape, ", "), dtype_name(in.dtype));
  fmt::print("\n  {:<{}}  {:<{}}  {:<{}}  {:>10}\n", "layer", wn, "type", wt, "output shape", ws, "params");
  for (const auto& r : net.summary())
    fmt::print("  {:<{}}  {:<{}}  {:<{}}  {:>10}\n", r.name, wn, r.type, wt, r.output_shape, ws, r.params);
  fmt::print("\n  total trainable parameters: {}\n  loss: cross_entropy({}, {})\n", net.parameter_count(), spec.loss_input,
             spec.label_input);
}

}  // namespace pd::tools
