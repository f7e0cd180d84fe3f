// ProcessGroup over NCCL, for ranks whose tensors live on a GPU. The communicator is bootstrapped
// through the same store as Gloo (rank 0's ncclUniqueId under gen{G}/{name}/nccl_id) and made
// non-blocking, so that nothing waits without a deadline: joining, and every collective, is polled
// (ncclCommGetAsyncError, cudaStreamQuery) until done, failed, or past the timeout; then the
// communicator is aborted (ncclCommAbort) and the error names the collective, its number and the wait,
// as the Gloo group's do. Collectives run on the device's stream (the one its kernels use), so they
// follow the kernels that produced their buffers. Buffers are device pointers.
#include <fmt/format.h>

#include "pd/core/allocator.h"
#include "pd/core/error.h"
#include "pd/core/tensor.h"
#include "pd/core/tensor_inl.h"
#include "pd/dist/process_group.h"
#include "pd/dist/store.h"

#ifdef PD_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <thread>

namespace pd::dist {
namespace {

using Clock = std::chrono::steady_clock;

class NcclGroup final : public ProcessGroup {
 public:
  NcclGroup(Store& store, const GroupOptions& o, int device)
      : ProcessGroup(o.rank, o.world, o.status_file), timeout_(o.timeout), device_(device) {
    use_device();
    stream_ = static_cast<cudaStream_t>(allocator_for(Place::cuda(device)).stream());
    ncclUniqueId id;
    const std::string key = fmt::format("gen{}/{}/nccl_id", o.generation, o.name);
    if (rank_ == 0) {
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      store.set(key, Bytes(id.internal, id.internal + sizeof id.internal));
    } else {
      const Bytes b = store.get(key, {}, fmt::format("rank 0 of {} to publish the NCCL communicator's id (key '{}')", world_, key));
      PD_CHECK(b.size() == sizeof id.internal, ErrorCode::kIO, "the NCCL id under '{}' has {} bytes, expected {}", key, b.size(),
               sizeof id.internal);
      std::memcpy(id.internal, b.data(), b.size());
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    check(ncclCommInitRankConfig(&comm_, world_, id, rank_, &config), "ncclCommInitRankConfig");
    wait("joining the NCCL communicator", Clock::now(), /*query_stream=*/false);
  }

  ~NcclGroup() override {
    if (!comm_) return;
    if (failed_) ncclCommAbort(comm_);
    else ncclCommDestroy(comm_);
  }

  void allreduce_sum(float* data, size_t n, const std::string& what) override {
    run("allreduce", what, n * sizeof(float), [&] { return ncclAllReduce(data, data, n, ncclFloat32, ncclSum, comm_, stream_); });
  }
  void allreduce_sum(double* data, size_t n, const std::string& what) override {
    run("allreduce", what, n * sizeof(double), [&] { return ncclAllReduce(data, data, n, ncclFloat64, ncclSum, comm_, stream_); });
  }
  void broadcast(void* data, size_t bytes, int root, const std::string& what) override {
    run("broadcast", what, bytes, [&] { return ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream_); });
  }
  void allgather(const void* in, void* out, size_t bytes_per_rank, const std::string& what) override {
    run("allgather", what, bytes_per_rank, [&] { return ncclAllGather(in, out, bytes_per_rank, ncclUint8, comm_, stream_); });
  }
  // NCCL has no gather: point-to-point sends to the root in one group call; the root's own part is a copy.
  void gather(const void* in, void* out, size_t bytes_per_rank, int root, const std::string& what) override {
    run("gather", what, bytes_per_rank, [&] {
      ncclResult_t r = ncclGroupStart();
      if (r != ncclSuccess) return r;
      if (rank_ != root) {
        r = ncclSend(in, bytes_per_rank, ncclUint8, root, comm_, stream_);
      } else {
        for (int p = 0; p < world_ && (r == ncclSuccess || r == ncclInProgress); ++p)
          if (p != root) r = ncclRecv(static_cast<char*>(out) + bytes_per_rank * p, bytes_per_rank, ncclUint8, p, comm_, stream_);
      }
      const ncclResult_t end = ncclGroupEnd();
      if (rank_ == root && cudaMemcpyAsync(static_cast<char*>(out) + bytes_per_rank * root, in, bytes_per_rank,
                                           cudaMemcpyDeviceToDevice, stream_) != cudaSuccess)
        return ncclUnhandledCudaError;
      return r == ncclSuccess || r == ncclInProgress ? end : r;
    });
  }
  void barrier(const std::string& what) override {
    if (!flag_.defined()) flag_ = Tensor::empty({1}, DType::f32, Place::cuda(device_));
    float* flag = flag_.data<float>();
    run("barrier", what, 0, [&] { return ncclAllReduce(flag, flag, 1, ncclFloat32, ncclSum, comm_, stream_); });
  }

 private:
  void use_device() const {
    PD_CHECK(cudaSetDevice(device_) == cudaSuccess, ErrorCode::kInternal, "rank {}: cannot use cuda:{}", rank_, device_);
  }

  void check(ncclResult_t r, const char* call) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    failed_ = true;
    raise(ErrorCode::kIO, "rank {} of {}: {} failed: {} ({})", rank_, world_, call, ncclGetErrorString(r), ncclGetLastError(comm_));
  }

  template <typename Fn>
  void run(const char* kind, const std::string& what, size_t bytes, Fn&& enqueue) {
    PD_CHECK(!failed_, ErrorCode::kIO, "rank {} of {}: the NCCL communicator was aborted by an earlier failure", rank_, world_);
    const int64_t seq = begin(kind, what);
    const std::string name = fmt::format("{} #{} ({}, {} bytes)", kind, seq, what, bytes);
    use_device();
    const auto t0 = Clock::now();
    const ncclResult_t r = enqueue();
    if (r != ncclSuccess && r != ncclInProgress) fail(name, t0, ncclGetErrorString(r), false);
    wait(name, t0, /*query_stream=*/true);
  }

  // Polls until the communicator is idle and (for a collective) the stream has finished it.
  void wait(const std::string& name, Clock::time_point t0, bool query_stream) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) fail(name, t0, ncclGetErrorString(state), false);
      if (state == ncclSuccess) {
        const cudaError_t q = query_stream ? cudaStreamQuery(stream_) : cudaSuccess;
        if (q == cudaSuccess) return;
        if (q != cudaErrorNotReady) fail(name, t0, cudaGetErrorString(q), false);
      }
      if (Clock::now() - t0 > timeout_) fail(name, t0, "no progress", true);
      std::this_thread::yield();
    }
  }

  [[noreturn]] void fail(const std::string& name, Clock::time_point t0, const std::string& why, bool timed_out) {
    failed_ = true;
    ncclCommAbort(comm_);  // frees the communicator; kernels waiting on peers return
    comm_ = nullptr;
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    raise(ErrorCode::kIO, "{} failed on rank {} of {} (cuda:{}) after {:.1f} s: {}. {}", name, rank_, world_, device_, waited, why,
          timed_out ? fmt::format("Another rank stopped making progress for the {} s timeout (stuck, stopped, or much "
                                  "slower); its log says where",
                                  timeout_.count() / 1000.0)
                    : "Another rank has probably exited or been killed; its log says why");
  }

  std::chrono::milliseconds timeout_;
  int device_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool failed_ = false;
  Tensor flag_;  // the barrier's one element
};

}  // namespace

std::unique_ptr<ProcessGroup> make_nccl_group(Store& store, const GroupOptions& options, int device) {
  PD_CHECK(options.world >= 1 && options.rank >= 0 && options.rank < options.world, ErrorCode::kInvalidArgument,
           "rank {} is not in a world of {} ranks", options.rank, options.world);
  PD_CHECK(device >= 0 && device < device_count(DeviceType::cuda), ErrorCode::kInvalidArgument,
           "rank {}: no cuda:{} for NCCL (this process sees {} GPUs)", options.rank, device, device_count(DeviceType::cuda));
  return std::make_unique<NcclGroup>(store, options, device);
}

}  // namespace pd::dist
#else
namespace pd::dist {
std::unique_ptr<ProcessGroup> make_nccl_group(Store&, const GroupOptions&, int) {
  raise(ErrorCode::kNotImplemented, "this paddle-cpp was built without NCCL (it needs the CUDA backend and libnccl beside the "
        "CUDA toolkit), so GPU ranks cannot communicate; rebuild with both, or train on the CPU");
}
}  // namespace pd::dist
#endif
