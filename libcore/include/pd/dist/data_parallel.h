// Data-parallel training, as the trainer sees it: the job a rank belongs to (from the environment
// pd-dist sets), state sent from rank 0 to all, small sums, and a gradient reducer that averages the
// gradients over ranks in buckets, each started while backward is still running.
//
//   if (auto env = pd::dist::DistEnv::from_environment()) {
//     pd::dist::DataParallel dp(*env);                       // meets the other ranks
//     pd::dist::GradientReducer reducer(dp.group(), net.trainable(), 25 << 20);
//     backward(loss); reducer.finish();                      // every rank now holds the mean gradient
//   }
#pragma once
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pd/dist/process_group.h"
#include "pd/dist/store.h"
#include "pd/model/train_config.h"

namespace pd::dist {

// The variables pd-dist sets for each rank (torchrun's names where there is one).
struct DistEnv {
  int rank = 0, world = 1, local_rank = 0;
  int restart = 0;                          // PD_DIST_RESTART: restarts so far (a restarted rank resumes)
  std::string master_host = "127.0.0.1";    // MASTER_ADDR
  int master_port = 0;                      // MASTER_PORT
  std::string store_dir;                    // PD_DIST_STORE=file:DIR: a file store there instead of the TCP one
  std::string host;                         // PD_DIST_HOST: this node's address for its peers
  std::chrono::milliseconds timeout{60000}; // PD_DIST_TIMEOUT (seconds)
  std::string status_file;                  // PD_DIST_STATUS_FILE
  // nullopt when WORLD_SIZE is not set (not started by pd-dist); pd::Error naming a malformed variable.
  static std::optional<DistEnv> from_environment();
};

class DataParallel {
 public:
  explicit DataParallel(const DistEnv& env);
  int rank() const { return env_.rank; }
  int world() const { return env_.world; }
  const DistEnv& env() const { return env_; }
  Store& store() { return *store_; }
  ProcessGroup& group() { return *group_; }
  // Collective: another group of the same ranks, for collectives that run beside the main group's on
  // another thread (sync_batch_norm's sums in backward, while the reducer's allreduces go on).
  std::unique_ptr<ProcessGroup> make_group(const std::string& name);
  // Collective: the group that averages gradients living on `place`: the main (Gloo) group for the
  // CPU, an NCCL group on the rank's GPU, made on first use.
  ProcessGroup& gradient_group(Place place);
  // Rank 0's `bytes` on every rank.
  std::string broadcast_bytes(const std::string& bytes, const std::string& what);
  // Element-wise sum over ranks, in place (f64: counts and loss sums stay exact).
  void sum(std::vector<double>& values, const std::string& what);

 private:
  GroupOptions group_options(const std::string& name) const;
  DistEnv env_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ProcessGroup> group_;
  std::unique_ptr<ProcessGroup> nccl_;
};

// Averages the gradients of `params` over the ranks. Parameters are packed into buckets of about
// `bucket_bytes`, in reverse order (the last layers' gradients are ready first); a bucket's allreduce
// starts on a communication thread as soon as backward has accumulated all of its gradients, in bucket
// order on every rank. Parameters that got no gradient count as zero.
class GradientReducer {
 public:
  GradientReducer(ProcessGroup& group, std::vector<train::NamedParam> params, size_t bucket_bytes);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;
  // Waits for every bucket and sets each parameter's .grad() to the mean over ranks. Rethrows a
  // collective's failure.
  void finish();
  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // element offset of each in data
    int64_t size = 0;
    Tensor data;                   // 1-D f32 on the parameters' place
    size_t pending = 0;           // gradients still to arrive this step
    bool ready = false;           // all gradients packed: the communication thread may reduce it
  };
  void on_grad_ready(size_t param);
  Tensor slot_of(Bucket& b, size_t slot) const;
  void mark_ready(Bucket& b);
  void communicate();

  ProcessGroup& group_;
  std::vector<train::NamedParam> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> where_;  // param -> (bucket, slot)
  std::vector<bool> arrived_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t next_to_reduce_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace pd::dist
