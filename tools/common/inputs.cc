#include "common/inputs.h"

#include <fmt/format.h>

#include "op_api.h"
#include "pd/data/readers.h"
#include "pd/exec/executor.h"

namespace pd::tools {
namespace {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw InputError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace

std::map<std::string, Tensor> read_inputs(const ir::Program& p, const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> out;
  for (const auto& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("--input '{}': expected NAME=FILE.npy; the model expects {}", spec, exec::describe_inputs(p));
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    const ir::ValueId id = p.find(name);
    if (id == ir::kNoValue || p.value(id).kind != ir::ValueKind::Input)
      fail("--input: the model has no input '{}'; it expects {}", name, exec::describe_inputs(p));
    if (out.count(name)) fail("--input: '{}' is given twice", name);
    try {
      out[name] = data::read_npy(file);
    } catch (const Error& e) {
      fail("--input {}: {}", name, e.what());
    }
  }
  return out;
}

std::map<std::string, Tensor> random_inputs(const ir::Program& p, int64_t batch, uint64_t seed) {
  std::map<std::string, Tensor> out;
  for (ir::ValueId id : p.inputs()) {
    const ir::Value& v = p.value(id);
    Shape s = v.type.shape;
    for (auto& d : s)
      if (d == -1) d = batch;
    const bool floating = v.type.dtype == DType::f32 || v.type.dtype == DType::f64;
    out[v.name] = floating ? ops::normal(s, 0.0, 1.0, static_cast<int64_t>(seed + static_cast<uint64_t>(id)), v.type.dtype)
                           : ops::zeros(s, v.type.dtype);
  }
  return out;
}

}  // namespace pd::tools
