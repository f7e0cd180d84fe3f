// Shuffling, transforms and batching with a background prefetch thread.
//
//   pd::data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .seed = 1}, transforms);
//   loader.start_epoch(epoch);                    // deterministic order from (seed, epoch)
//   while (auto batch = loader.next()) { ...batch->x (f32), batch->y (i64)... }
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "pd/core/tensor.h"

namespace pd::data {

// A labelled dataset held in memory: features [N, ...] of any dtype, labels [N] integer.
struct Dataset {
  Tensor features;
  Tensor labels;
  int64_t size() const { return features.defined() ? features.shape()[0] : 0; }
  // The first n samples (all of them when there are no more), as copies: a view would keep every
  // sample's memory alive (`--limit` held a whole 60000-image file that way).
  Dataset first(int64_t n) const;
};

// Per-sample transform on one example's f32 features (shape = features.shape()[1:]). `rng_seed` is
// derived from (loader seed, epoch, sample index), so augmentation is deterministic and resumable.
struct Transform {
  enum Kind { Scale, Normalize, RandomFlip, RandomCrop } kind = Scale;
  double scale = 1.0;              // Scale: x * scale
  std::vector<double> mean, std;   // Normalize: (x - mean[c]) / std[c]; one value = all channels
  double p = 0.5;                  // RandomFlip: horizontal flip probability (last axis)
  int64_t padding = 0;             // RandomCrop: zero-pad each side of the last two axes, then crop back
};
void apply_transform(const Transform& t, float* sample, const Shape& sample_shape, uint64_t rng_seed);
// The rng_seed a DataLoader seeded `seed` gives transform number `transform` of dataset sample `sample`
// in `epoch`.
uint64_t transform_seed(uint64_t seed, int64_t epoch, int64_t sample, size_t transform);
// Whether `t` applies to samples of `sample_shape` (pd::Error saying why not): the model YAML checks its
// transforms with it, so that --check finds what training would.
void check_transform(const Transform& t, const Shape& sample_shape);

struct LoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = false;
  bool drop_last = false;  // false: the last partial batch is returned
  uint64_t seed = 0;
  int prefetch = 2;        // batches prepared ahead by the background thread (0 = synchronous)
  // Data parallel: batch_size is the global batch; this loader returns part `shard` of `shards` of each
  // (equal parts, the first ones one sample larger when it does not divide). Order and augmentation
  // are the same as with one shard, so N ranks see exactly the samples one process would.
  int shard = 0, shards = 1;
};

struct Batch {
  Tensor x;            // f32 [B, ...] after transforms
  Tensor y;            // i64 [B]
  int64_t index = 0;   // batch number within the epoch
  int64_t global_size = 0;  // samples in the whole batch, over all shards
};

class DataLoader {
 public:
  DataLoader(Dataset data, LoaderOptions options, std::vector<Transform> transforms = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts `epoch`, skipping the first `skip_batches` batches (resume from a checkpoint mid-epoch).
  void start_epoch(int64_t epoch, int64_t skip_batches = 0);
  // The next batch of the current epoch, or nullopt when it is finished.
  std::optional<Batch> next();
  int64_t batches_per_epoch() const;
  const Dataset& dataset() const { return data_; }

 private:
  Batch make_batch(int64_t index) const;
  void stop_worker();

  Dataset data_;
  LoaderOptions options_;
  std::vector<Transform> transforms_;
  size_t affine_prefix_ = 0;  // the leading scale/normalize transforms, folded into:
  std::vector<float> channel_scale_, channel_shift_;  // x * scale[c] + shift[c] per channel of a sample
  std::vector<int64_t> order_;
  int64_t epoch_ = 0, next_index_ = 0;
  // Prefetching.
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  std::exception_ptr error_;
  bool stop_ = false, worker_done_ = false;
};

}  // namespace pd::data
