// pd-train's checkpoints: parameters, optimizer state, and where the run stands (epoch, batch, step,
// and the partial epoch's loss so that a resumed epoch reports what an uninterrupted one would), plus
// the facts a resume must match (samples per epoch, the schedule's length).
#pragma once
#include <cstdint>
#include <string>

#include "pd/model/network.h"
#include "pd/train/optimizer.h"

namespace pd::train {

struct RunState {
  int64_t epoch = 0, batch = 0, step = 0;  // the next batch to train (epoch 0-based)
  double epoch_loss_sum = 0;               // sum of per-sample losses so far in this epoch
  int64_t epoch_samples = 0;
  double epoch_seconds = 0;                // training time spent in this epoch before the checkpoint
};

struct RunFacts {
  int64_t train_samples = -1, batches_per_epoch = -1, epochs = -1, schedule_steps = -1;  // -1: not recorded
};

// `optim_state` is the whole optimizer's (Optimizer::state(), or every rank's shard put together).
void save_checkpoint(const std::string& path, model::Network& net, const std::map<std::string, Tensor>& optim_state,
                     const RunState& state, const RunFacts& facts, uint64_t spec_hash,
                     const std::map<std::string, std::string>& extra = {});
// The checkpoint's bytes (pd-dist sends them from rank 0 to the other ranks); `extra` adds metadata.
std::string encode_checkpoint(model::Network& net, const std::map<std::string, Tensor>& optim_state, const RunState& state,
                              const RunFacts& facts, uint64_t spec_hash, const std::map<std::string, std::string>& extra = {});

struct Checkpoint {
  RunState state;
  RunFacts facts;
  std::map<std::string, std::string> metadata;
  std::map<std::string, Tensor> optim_state;  // as stored: every parameter's
};
// Loads parameters into `net` and, unless `opt` is null, optimizer state into `opt`; refuses a
// checkpoint of another model.
Checkpoint load_checkpoint(const std::string& path, model::Network& net, Optimizer* opt, uint64_t spec_hash);
// The same, from bytes already read; `path` names them in messages.
Checkpoint restore_checkpoint(const std::string& bytes, const std::string& path, model::Network& net, Optimizer* opt,
                              uint64_t spec_hash);

}  // namespace pd::train
