// What pd-bench reports about the machine, and the measured peaks that results are a share of.
//
//   pd::bench::Peak p = pd::bench::machine_peak(/*threads=*/2, /*reprobe=*/false);  // cached probe
#pragma once
#include <string>

#include "pd/core/dtype.h"
#include "pd/core/place.h"

namespace pd::bench {

struct MachineInfo {
  std::string cpu;       // "model name" of /proc/cpuinfo
  std::string isa;       // "avx512" / "avx2" / "sse"
  int cores = 0;         // logical CPUs online
  int threads = 0;       // OpenMP threads the kernels use now
  std::string onednn;    // "3.0.0" or "none"
  std::string compiler;  // "GCC 12.2.0"
};
MachineInfo machine_info();

struct Peak {
  double gemm_gflops = 0;  // best FP32 GEMM (2048^3 through pd::ops::matmul, default backend)
  double mem_gbps = 0;     // best of a triad and a two-array read over arrays far beyond the caches
  double cache_bytes = 0;  // largest CPU cache (0 when unknown): memory-bound problems that fit run from it
  bool cached = false;     // read from the cache file rather than measured now
  std::string cache_path;
  std::string device;      // set for a GPU's peaks (device_peak): "cuda:0"
  std::string gemm_dtype = "f32";
};
// Measures once per (CPU model, thread count) and keeps the result in
// $XDG_CACHE_HOME or ~/.cache/paddle-cpp/peak.json; `reprobe` measures again.
Peak machine_peak(int threads, bool reprobe);

// A GPU's peaks, measured on each call (a few seconds): an 8192^3 matmul in `dtype` through
// pd::ops::matmul (tensor cores for bf16 / f16; f32 without TF32) and a 1 GiB device-to-device copy
// (bytes read plus written). What pd-bench --backend cuda reports a share of.
Peak device_peak(Place place, DType dtype);

// The largest CPU cache in bytes (sysfs, else sysconf), 0 when unknown.
double last_level_cache_bytes();

}  // namespace pd::bench
