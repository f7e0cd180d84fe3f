// Sharding stage 1 (ZeRO-1, PaddlePaddle's sharding level 'os'): each rank keeps the optimizer state of,
// and updates, only its share of the parameters; after the update every rank receives the others'
// new values. The gradients are still averaged over all ranks first (GradientReducer), so the weights
// are the ones unsharded training computes, bit for bit; what a rank saves is the optimizer state of
// the parameters it does not own (Adam's two moments: two thirds of the training state).
//
//   pd::dist::OptimizerShards shards(dp.group(), net.trainable());
//   pd::train::Optimizer opt(net.trainable(), config, shards.owned());
//   reducer.finish(); opt.step(lr); shards.gather_parameters();
//   auto whole = shards.gather_state(opt.state());   // on rank 0, for its checkpoint: every shard
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/dist/process_group.h"
#include "pd/model/train_config.h"

namespace pd::dist {

class OptimizerShards {
 public:
  // Assigns every parameter to one rank, largest first to the rank holding the fewest elements so far
  // (the same on every rank: the order and the sizes are). Parameters must be contiguous f32 on the CPU.
  // The parameters are sent around in allgathers of at most `slot_elements` per rank (4 MiB).
  OptimizerShards(ProcessGroup& group, std::vector<train::NamedParam> params, int64_t slot_elements = 1 << 20);
  std::vector<bool> owned() const;  // this rank's flags, for the Optimizer
  int owner(size_t param) const { return owner_[param]; }
  int64_t elements_of(int rank) const { return elements_[static_cast<size_t>(rank)]; }
  // Collective: every rank's parameters now hold their owners' values.
  void gather_parameters();
  // Collective: every rank's shard of the optimizer state (Optimizer::state()) put together on rank 0,
  // for its checkpoint (empty on the other ranks).
  std::map<std::string, Tensor> gather_state(std::map<std::string, Tensor> mine);

 private:
  ProcessGroup& group_;
  std::vector<train::NamedParam> params_;
  std::vector<int> owner_;
  std::vector<int64_t> elements_;  // per rank
  std::vector<float> buffer_;      // world x a slot, for the allgathers of the parameters
};

}  // namespace pd::dist
