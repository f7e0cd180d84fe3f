// How long OpenMP's idle threads spin before they sleep. libgomp's default, 300,000 pauses (about 18 ms
// on a current Xeon core), makes two busy processes on the same cores wait out each other's time slices
// at every barrier: pd-infer ran 100x slower (LeNet batch 64: 0.4 -> 40 ms) while a pd-train held both
// cores. 10,000 pauses still cover the gaps between one run's parallel regions (a quiet machine loses
// nothing measurable; 3,000 made the ViT at batch 1 40% slower), and a busy one costs about 6x instead
// of 100x (docs/benchmarks.md). libgomp reads the setting once, when it is loaded, so a tool started
// without one sets it and runs itself again; the user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is kept.
#pragma once
#include <unistd.h>

#include <cstdlib>

namespace pd::tools {

inline void bound_openmp_spin(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure (no /proc): go on with libgomp's default
}

}  // namespace pd::tools
