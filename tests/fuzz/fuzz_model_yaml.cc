// Model YAML to a network: parse_model_yaml, then the Network pd-train --check builds (every layer built
// and run once on a probe batch). Specs that are valid but large (an input or a layer attribute above
// the bounds below) are parsed only: building them is the allocation the user asked for, not a bug.
#include <variant>

#include "fuzz_util.h"
#include "pd/model/network.h"

namespace {

constexpr int64_t kMaxInputNumel = 4096, kMaxAttr = 512;

bool small(const pd::model::ModelSpec& spec) {
  for (const auto& in : spec.inputs) {
    int64_t n = 1;
    for (int64_t d : in.shape) {
      if (d < 0 || d > kMaxInputNumel) return false;
      n *= d;
      if (n > kMaxInputNumel) return false;
    }
  }
  auto bounded = [](const pd::AttrMap& attrs) {
    for (const auto& [key, value] : attrs) {
      if (const auto* i = std::get_if<int64_t>(&value); i && (*i > kMaxAttr || *i < -kMaxAttr)) return false;
      if (const auto* v = std::get_if<std::vector<int64_t>>(&value))
        for (int64_t x : *v)
          if (x > kMaxAttr || x < -kMaxAttr) return false;
    }
    return true;
  };
  for (const auto& l : spec.layers)
    if (!bounded(l.attrs) || !bounded(l.op_attrs)) return false;
  return spec.layers.size() <= 64;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pd_fuzz::run([&] {
    const pd::model::ModelSpec spec = pd::model::parse_model_yaml(pd_fuzz::bytes(data, size), "fuzz.yaml");
    if (small(spec)) pd::model::Network net(spec);
  });
}
