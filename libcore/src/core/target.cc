#include "pd/core/target.h"

#include <algorithm>

#include "pd/core/cpu_features.h"
#include "pd/core/error.h"

namespace pd {

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::baseline: return "baseline";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
  }
  return "?";
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::reference: return "reference";
    case Backend::onednn: return "onednn";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

std::vector<Backend> built_cpu_backends() {
#ifdef PD_WITH_ONEDNN
  return {Backend::onednn, Backend::reference};
#else
  return {Backend::reference};
#endif
}

bool cpu_backend_built(Backend b) {
  const std::vector<Backend> built = built_cpu_backends();
  return std::find(built.begin(), built.end(), b) != built.end();
}

Target Target::host() {
  Target t;
  t.backends = built_cpu_backends();
  t.isa = cpu_has_avx512() ? CpuIsa::avx512 : cpu_has_avx2_fma() ? CpuIsa::avx2 : CpuIsa::baseline;
  return t;
}

Target Target::parse(const std::string& name) {
  if (name == "host") return host();
  Target t;
  t.backends = built_cpu_backends();
  for (CpuIsa isa : {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512}) {
    if (name == std::string("cpu-") + cpu_isa_name(isa)) {
      t.isa = isa;
      return t;
    }
  }
  if (name == "cpu") return t;
  raise(ErrorCode::kInvalidArgument,
        "unknown target '{}' (valid targets: host, cpu, cpu-baseline, cpu-avx2, cpu-avx512)", name);
}

std::string Target::str() const {
  if (!place.is_cpu()) return place.str();
  return std::string("cpu-") + cpu_isa_name(isa);
}

bool Target::can_run(const Target& lowered) const {
  return place.type == lowered.place.type && (!place.is_cpu() || isa >= lowered.isa);
}

}  // namespace pd
