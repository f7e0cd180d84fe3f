// Target: the machine a Program is compiled for. Portable passes (pd-opt) never look at it; lowering
// passes (fusions into kernel-specific ops, Winograd weights) and kernel binding do, at load time
// (pd/exec/plan.h), so saved models stay portable.
//
//   pd::Target t = pd::Target::host();               // this machine: cpu, [onednn, reference], its ISA
//   pd::Target a = pd::Target::parse("cpu-avx2");    // a named one (pd-opt --target)
//   t.can_run(a);                                    // a program lowered for `a` runs on `t`
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "pd/core/backend.h"
#include "pd/core/place.h"

namespace pd {

// Instruction sets kernels have code paths for, narrowest first (each includes the one before).
enum class CpuIsa : uint8_t { baseline, avx2, avx512 };
const char* cpu_isa_name(CpuIsa isa);

struct Target {
  Place place = Place::cpu();
  std::vector<Backend> backends;  // kernel backends in preference order
  CpuIsa isa = CpuIsa::baseline;

  // The calling machine: the CPU with every backend this build has (oneDNN first) and the widest ISA
  // it supports that PD_CPU_ISA allows (pd/core/cpu_features.h).
  static Target host();
  // "host", "cpu" (= cpu-baseline), "cpu-baseline", "cpu-avx2", "cpu-avx512". Throws pd::Error naming
  // the valid forms.
  static Target parse(const std::string& name);

  // "cpu-avx2": the part that decides what a lowered program needs (backends only order kernels,
  // and every op keeps a reference kernel).
  std::string str() const;
  // Whether a program lowered for `lowered` runs here: same device type and an ISA at least as wide.
  bool can_run(const Target& lowered) const;
  bool has_isa(CpuIsa wanted) const { return place.is_cpu() && isa >= wanted; }
  bool has_backend(Backend b) const { return std::find(backends.begin(), backends.end(), b) != backends.end(); }
};

}  // namespace pd
