// Host-to-device copies that do not wait for the GPU. A copy from pageable memory (a data loader's
// batch, a user's vector) is first copied on the host into a pinned (page-locked) staging buffer, then
// queued as an asynchronous DMA on the device's stream; the call returns at once, so the host goes on
// queueing the step's kernels while the GPU still runs the previous step's. A staging buffer is reused
// only after the event recorded behind its copy has completed (PyTorch's pinned host cache works
// alike). Copies above kMaxStagedBytes (a model's weights, once) and any copy when pinned memory
// cannot be had go the plain way: queued, then waited for.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace pd::kernels::cuda {

class HostStaging {
 public:
  static constexpr size_t kMaxStagedBytes = size_t{16} << 20;
  static constexpr size_t kMaxPinnedBytes = size_t{128} << 20;  // all of one device's staging buffers

  HostStaging() = default;
  // Never freed: the buffers live as long as the process (the allocator that owns this does too).
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Copies `bytes` from host_src to device memory dst on `stream`; host_src may be reused on return.
  void copy_to_device(void* dst, const void* host_src, size_t bytes, cudaStream_t stream);

 private:
  struct Buffer {
    void* ptr = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;  // recorded after the buffer's last copy
  };
  // A buffer of at least `bytes` whose last copy has completed, or null when none can be had.
  Buffer* take(size_t bytes);

  std::mutex mu_;
  std::vector<Buffer> buffers_;
  size_t pinned_bytes_ = 0;
};

}  // namespace pd::kernels::cuda
