// The collectives data-parallel training needs, over one engine (Gloo on CPU ranks, NCCL on GPU ranks). Every collective
// has a sequence number shared by all ranks and a timeout; a failure names the collective, its number,
// what it carried and what probably happened, so that a job never hangs silently.
//
//   auto pg = pd::dist::make_gloo_group(store, {.rank = 1, .world = 2, .generation = 0});
//   pg->allreduce_sum(grads.data(), grads.size(), "gradient bucket 0");
//   pg->broadcast(bytes.data(), bytes.size(), 0, "initial weights");
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace pd::dist {

class Store;

// The collective a rank is in, in a small file its launcher reads when the rank dies (a rank killed by
// SIGKILL cannot say it itself): "allreduce #57 (gradient bucket 0)".
class CollectiveStatus {
 public:
  explicit CollectiveStatus(const std::string& path);
  ~CollectiveStatus();
  CollectiveStatus(const CollectiveStatus&) = delete;
  CollectiveStatus& operator=(const CollectiveStatus&) = delete;
  void record(const std::string& text);
  static std::string read(const std::string& path);  // "" when absent

 private:
  int fd_ = -1;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int world() const { return world_; }
  int64_t sequence() const { return seq_; }  // collectives started so far

  // In place: every rank ends with the element-wise sum over ranks.
  virtual void allreduce_sum(float* data, size_t n, const std::string& what) = 0;
  virtual void allreduce_sum(double* data, size_t n, const std::string& what) = 0;
  // `bytes` from `root` to every rank, in place.
  virtual void broadcast(void* data, size_t bytes, int root, const std::string& what) = 0;
  // Rank r's `bytes_per_rank` input lands at out + r * bytes_per_rank on every rank.
  virtual void allgather(const void* in, void* out, size_t bytes_per_rank, const std::string& what) = 0;
  // The same, to `root` only (`out` is read on the root alone and may be null elsewhere).
  virtual void gather(const void* in, void* out, size_t bytes_per_rank, int root, const std::string& what) = 0;
  virtual void barrier(const std::string& what) = 0;

 protected:
  ProcessGroup(int rank, int world, const std::string& status_file)
      : rank_(rank), world_(world), status_(status_file) {}
  // Counts the collective and records it as the one in progress (see CollectiveStatus).
  int64_t begin(const char* kind, const std::string& what);
  int rank_, world_;
  int64_t seq_ = 0;
  CollectiveStatus status_;
};

struct GroupOptions {
  int rank = 0, world = 1;
  int generation = 0;                     // restarts so far: keys of earlier generations are not read
  std::string name = "gloo";              // one per group of a job: its rendezvous keys
  std::string host;                       // this rank's address for its peers ("" = 127.0.0.1)
  std::chrono::milliseconds timeout{60000};  // per collective and for the rendezvous
  std::string status_file;                // where the collective in progress is recorded ("" = nowhere)
};

// Meets the other ranks through `store` and connects to each over TCP (Gloo). Throws pd::Error naming
// the ranks that did not arrive.
std::unique_ptr<ProcessGroup> make_gloo_group(Store& store, const GroupOptions& options);
// The same over NCCL for a rank on cuda:`device`: buffers are device pointers, and every collective is
// done (or has failed, naming itself) when the call returns.
std::unique_ptr<ProcessGroup> make_nccl_group(Store& store, const GroupOptions& options, int device);


}  // namespace pd::dist
