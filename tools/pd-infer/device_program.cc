#include "device_program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "pd/ops/dispatch.h"
#include "registry.h"

namespace pd::infer {

ir::Program program_on(const ir::Program& program, Place place) {
  std::set<std::string> missing;
  for (const ir::Operation& op : program.ops()) {
    const auto& kernels = registry::registered_kernels(op.type);
    if (kernels.empty()) continue;  // a view: no kernel of its own
    // Any dtype will do here: a missing dtype is the op's own clear error when it runs.
    bool found = false;
    for (const KernelKey& k : kernels) found = found || backend_allowed(k.backend, place);
    if (!found) missing.insert(op.type);
  }
  PD_CHECK(missing.empty(), ErrorCode::kNotImplemented,
           "the model has ops with no kernel on {}: {}; run it on the CPU (no --device), or run the model as pd-train "
           "wrote it (pd-opt's CPU lowering makes fused CPU ops)",
           place.str(), fmt::join(missing, ", "));
  ir::Program out = program;
  for (size_t i = 0; i < out.values().size(); ++i)
    if (out.values()[i].kind == ir::ValueKind::Param) {
      const auto id = static_cast<ir::ValueId>(i);
      out.set_param(id, out.param(id).to(place));
    }
  return out;
}

std::map<std::string, Tensor> to_place(const std::map<std::string, Tensor>& tensors, Place place) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : tensors) out[name] = t.to(place);
  return out;
}

}  // namespace pd::infer
