// Host-side pieces of the CUDA runtime shared by device_runtime.cc and the .cu files: the strided
// copy kernel behind Tensor::clone / contiguous on a device, and a scoped current-device switch.
#pragma once
#include <cuda_runtime.h>

#include "cuda/cuda_common.cuh"
#include "pd/core/shape.h"

namespace pd::kernels::cuda {

// Gathers a strided view into contiguous dst on the same device (copy.cu).
void strided_copy(cudaStream_t stream, void* dst, const void* src, size_t elem, const Shape& shape, const Shape& strides);

class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace pd::kernels::cuda
