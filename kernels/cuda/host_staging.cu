// Pinned staging of host-to-device copies (host_staging.h).
#include "cuda/host_staging.h"

#include <cstring>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {

HostStaging::Buffer* HostStaging::take(size_t bytes) {
  Buffer* best = nullptr;
  for (Buffer& b : buffers_) {
    if (b.capacity < bytes || (best && best->capacity <= b.capacity)) continue;
    if (cudaEventQuery(b.done) == cudaSuccess) best = &b;  // its last copy has left the buffer
    else cudaGetLastError();                               // cudaErrorNotReady is not sticky, but clear it anyway
  }
  if (best) return best;
  // Sizes rounded up to 64 KiB so that a loader's batches, alike but for the last, share buffers.
  const size_t capacity = (bytes + (size_t{64} << 10) - 1) / (size_t{64} << 10) * (size_t{64} << 10);
  if (pinned_bytes_ + capacity > kMaxPinnedBytes) return nullptr;
  Buffer b;
  if (cudaHostAlloc(&b.ptr, capacity, cudaHostAllocDefault) != cudaSuccess) {  // e.g. a locked-memory limit
    cudaGetLastError();
    return nullptr;
  }
  PD_CUDA_CHECK(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
  b.capacity = capacity;
  pinned_bytes_ += capacity;
  buffers_.push_back(b);
  return &buffers_.back();
}

void HostStaging::copy_to_device(void* dst, const void* host_src, size_t bytes, cudaStream_t stream) {
  if (bytes <= kMaxStagedBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (Buffer* b = take(bytes)) {
      std::memcpy(b->ptr, host_src, bytes);
      PD_CUDA_CHECK(cudaMemcpyAsync(dst, b->ptr, bytes, cudaMemcpyHostToDevice, stream));
      PD_CUDA_CHECK(cudaEventRecord(b->done, stream));
      return;
    }
  }
  PD_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream));
  // Pageable host memory: the caller may free it as soon as this returns.
  PD_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace pd::kernels::cuda
