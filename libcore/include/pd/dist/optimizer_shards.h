// Sharding stage 1 (ZeRO-1, PaddlePaddle's sharding level 'os'): each rank keeps the optimizer state of,
// and updates, only its share of the parameters; after the update every rank receives the others'
// new values. The gradients are still averaged over all ranks first (GradientReducer), so the weights
// are the ones unsharded training computes, bit for bit; what a rank saves is the optimizer state of
// the parameters it does not own (Adam's two moments: two thirds of the training state).
//
//   pd::dist::OptimizerShards shards(dp.group(), net.trainable());
//   pd::train::Optimizer opt(net.trainable(), config, shards.owned());
//   reducer.finish(); opt.step(lr); shards.gather_parameters();
//   auto whole = shards.gather_state(opt.state(false), opt.state_suffixes());  // rank 0: every shard
#pragma once
#include <functional>
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
  // Parameters and state are sent around in rounds of at most `slot_elements` per rank (4 MiB).
  OptimizerShards(ProcessGroup& group, std::vector<train::NamedParam> params, int64_t slot_elements = 1 << 20);
  std::vector<bool> owned() const;  // this rank's flags, for the Optimizer
  int owner(size_t param) const { return owner_[param]; }
  int64_t elements_of(int rank) const { return elements_[static_cast<size_t>(rank)]; }
  // Collective: every rank's parameters now hold their owners' values.
  void gather_parameters();
  // Collective: every rank's shard of the optimizer state put together on rank 0, for its checkpoint
  // (empty on the other ranks). `mine` is this rank's state by name ("fc1.weight.m"; may be the live
  // tensors: they are only read), `suffixes` the entries each parameter has ("m", "v"); entries that
  // are not per parameter ("step") are rank 0's.
  std::map<std::string, Tensor> gather_state(const std::map<std::string, Tensor>& mine, const std::vector<std::string>& suffixes);

 private:
  struct Segment {
    float* data;
    int64_t n;
  };
  // Every rank's stream of segments (segments_of(rank)), at most `longest` floats, copied into the
  // same segments on `root` (or on every rank when root < 0), in rounds of one slot a rank.
  void exchange(const std::function<std::vector<Segment>(int rank)>& segments_of, int64_t longest, int root,
                const std::string& what);

  ProcessGroup& group_;
  std::vector<train::NamedParam> params_;
  std::vector<int> owner_;
  std::vector<int64_t> elements_;  // per rank
  int64_t slot_;                   // floats a rank sends per round
  std::vector<float> buffer_;      // world x a slot
};

}  // namespace pd::dist
