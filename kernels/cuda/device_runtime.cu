// The CUDA device runtime: error reporting, the caching device allocator (one per device, with its
// stream), and the cuBLAS / cuBLASLt / cuDNN handles kernels share. Registered with pd_base at start-up,
// so that Place::cuda(i) tensors, Tensor::to and pd::device_count work in every tool.
//
// The allocator keeps freed blocks in size classes (512-byte steps below 1 MiB, 2 MiB steps above)
// and hands them out again without cudaMalloc. Blocks are used by one stream per device, so reuse is
// ordered by the stream itself: a block freed on the host while a kernel still reads it is only
// written again by a later kernel on the same stream. Host-to-device copies go through pinned staging
// buffers and do not wait for the stream (host_staging.h).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/device_runtime.h"
#include "cuda/host_staging.h"
#include "pd/core/allocator.h"
#include "pd/core/error.h"

namespace pd::kernels::cuda {

void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky launch error so the next call reports its own
  if (err == cudaErrorMemoryAllocation)
    raise(ErrorCode::kInternal, "CUDA out of memory in {} ({}:{}): {}; free tensors or call empty_cache()", what, file,
          line, cudaGetErrorString(err));
  raise(ErrorCode::kInternal, "CUDA error in {} ({}:{}): {} ({})", what, file, line, cudaGetErrorString(err),
        cudaGetErrorName(err));
}

void check_cublas(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  raise(ErrorCode::kInternal, "cuBLAS error in {} ({}:{}): {} ({})", what, file, line, cublasGetStatusString(status),
        cublasGetStatusName(status));
}

void check_cudnn(cudnnStatus_t status, const char* what, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  raise(ErrorCode::kInternal, "cuDNN error in {} ({}:{}): {}", what, file, line, cudnnGetErrorString(status));
}

namespace {

constexpr size_t kSmallStep = 512;
constexpr size_t kSmallLimit = 1 << 20;
constexpr size_t kLargeStep = 2 << 20;

size_t size_class(size_t bytes) {
  if (bytes == 0) bytes = 1;
  const size_t step = bytes < kSmallLimit ? kSmallStep : kLargeStep;
  return (bytes + step - 1) / step * step;
}

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int device) : device_(device) {
    DeviceGuard guard(device_);
    PD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }

  std::shared_ptr<void> allocate(size_t bytes) override {
    const size_t cls = size_class(bytes);
    void* p = take_cached(cls);
    if (p == nullptr) {
      DeviceGuard guard(device_);
      cudaError_t err = cudaMalloc(&p, cls);
      if (err == cudaErrorMemoryAllocation) {  // give the cache back and try once more
        cudaGetLastError();
        empty_cache();
        err = cudaMalloc(&p, cls);
      }
      PD_CHECK(err == cudaSuccess, ErrorCode::kInternal,
               "CUDA out of memory on cuda:{} allocating {} bytes ({} in use, {} cached): {}", device_, bytes,
               stats().allocated_bytes, stats().cached_bytes, cudaGetErrorString(err));
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.system_allocations;
      const int64_t held = stats_.allocated_bytes + stats_.cached_bytes + static_cast<int64_t>(cls);
      stats_.peak_held_bytes = std::max(stats_.peak_held_bytes, held);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.allocated_bytes += static_cast<int64_t>(cls);
      stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    }
    return std::shared_ptr<void>(p, [this, cls](void* q) { release(q, cls); });
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_held_bytes = stats_.allocated_bytes + stats_.cached_bytes;
  }
  void empty_cache() override {
    DeviceGuard guard(device_);
    cudaStreamSynchronize(stream_);  // cached blocks may still be read by queued kernels
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [cls, blocks] : free_)
      for (void* p : blocks) cudaFree(p);
    free_.clear();
    stats_.cached_bytes = 0;
  }

  void copy_to_host(void* host_dst, const void* src, size_t bytes) const override {
    if (bytes == 0) return;
    DeviceGuard guard(device_);
    PD_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    PD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy_from_host(void* dst, const void* host_src, size_t bytes) const override {
    if (bytes == 0) return;
    DeviceGuard guard(device_);
    staging_.copy_to_device(dst, host_src, bytes, stream_);
  }
  void copy_strided(void* dst, const void* src, size_t elem, const Shape& shape, const Shape& strides) const override {
    DeviceGuard guard(device_);
    strided_copy(stream_, dst, src, elem, shape, strides);
  }
  void* stream() const override { return stream_; }
  void synchronize() const override {
    DeviceGuard guard(device_);
    PD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  void* take_cached(size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(cls);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= static_cast<int64_t>(cls);
    ++stats_.cache_hits;
    return p;
  }
  void release(void* p, size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[cls].push_back(p);
    stats_.allocated_bytes -= static_cast<int64_t>(cls);
    stats_.cached_bytes += static_cast<int64_t>(cls);
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  mutable HostStaging staging_;  // host-to-device copies through pinned buffers
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  AllocatorStats stats_;
};

int count_devices() {
  static const int n = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {  // no driver, no GPU, a broken install: all "none"
      cudaGetLastError();
      return 0;
    }
    return count;
  }();
  return n;
}

// Never destroyed: tensors may be freed during static destruction, after the driver has shut down.
CudaAllocator* allocator(int index) {
  static std::mutex mu;
  static std::vector<CudaAllocator*>* all = new std::vector<CudaAllocator*>();
  if (index < 0 || index >= count_devices()) return nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (all->empty()) all->resize(static_cast<size_t>(count_devices()), nullptr);
  CudaAllocator*& a = (*all)[static_cast<size_t>(index)];
  if (a == nullptr) a = new CudaAllocator(index);
  return a;
}

Allocator* allocator_factory(int index) { return allocator(index); }

struct Handles {
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

Handles& handles(const KernelContext& ctx) {
  static std::mutex mu;
  static auto* all = new std::map<int, Handles>();
  std::lock_guard<std::mutex> lock(mu);
  return (*all)[ctx.place.index];
}

const bool registered = [] {
  register_allocator(DeviceType::cuda, allocator_factory);
  register_device_count(DeviceType::cuda, count_devices);
  return true;
}();

}  // namespace

DeviceGuard::DeviceGuard(int device) {
  cudaGetDevice(&previous_);
  if (previous_ != device) PD_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int now = previous_;
  cudaGetDevice(&now);
  if (now != previous_) cudaSetDevice(previous_);
}

cublasHandle_t cublas_handle(const KernelContext& ctx) {
  Handles& h = handles(ctx);
  if (h.cublas == nullptr) {
    load_cublas();
    PD_CUBLAS_CHECK(cublasCreate(&h.cublas));
    PD_CUBLAS_CHECK(cublasSetStream(h.cublas, stream_of(ctx)));
  }
  return h.cublas;
}

cublasLtHandle_t cublaslt_handle(const KernelContext& ctx) {
  Handles& h = handles(ctx);
  if (h.cublaslt == nullptr) {
    load_cublas();
    PD_CUBLAS_CHECK(cublasLtCreate(&h.cublaslt));
  }
  return h.cublaslt;
}

cudnnHandle_t cudnn_handle(const KernelContext& ctx) {
  Handles& h = handles(ctx);
  if (h.cudnn == nullptr) {
    PD_CUDNN_CHECK(cudnnCreate(&h.cudnn));
    PD_CUDNN_CHECK(cudnnSetStream(h.cudnn, stream_of(ctx)));
  }
  return h.cudnn;
}

void* workspace(const KernelContext& ctx, size_t bytes) {
  Handles& h = handles(ctx);
  if (bytes > h.workspace_bytes) {
    // Kernels queued on the stream may still use the old buffer; the stream orders the free after them.
    if (h.workspace) PD_CUDA_CHECK(cudaFreeAsync(h.workspace, stream_of(ctx)));
    PD_CUDA_CHECK(cudaMallocAsync(&h.workspace, bytes, stream_of(ctx)));
    h.workspace_bytes = bytes;
  }
  return h.workspace;
}

}  // namespace pd::kernels::cuda
