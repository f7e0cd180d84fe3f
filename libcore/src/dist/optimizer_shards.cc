#include "pd/dist/optimizer_shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "pd/core/error.h"
#include "pd/io/tensor_file.h"

namespace pd::dist {

OptimizerShards::OptimizerShards(ProcessGroup& group, std::vector<train::NamedParam> params, int64_t slot_elements)
    : group_(group), params_(std::move(params)), owner_(params_.size(), 0), elements_(static_cast<size_t>(group.world()), 0) {
  for (const auto& p : params_)
    PD_CHECK(p.value.dtype() == DType::f32 && p.value.place().is_cpu() && p.value.is_contiguous(), ErrorCode::kNotImplemented,
             "sharding: optimizer_state shards contiguous f32 parameters on the CPU, but '{}' is {} on {}", p.name,
             dtype_name(p.value.dtype()), p.value.place().str());
  std::vector<size_t> order(params_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return params_[a].value.numel() > params_[b].value.numel(); });
  for (size_t k : order) {
    const auto least = std::min_element(elements_.begin(), elements_.end());  // the first such rank: deterministic
    owner_[k] = static_cast<int>(least - elements_.begin());
    *least += params_[k].value.numel();
  }
  const int64_t slot = std::max<int64_t>(1, std::min(slot_elements, *std::max_element(elements_.begin(), elements_.end())));
  buffer_.resize(static_cast<size_t>(slot) * static_cast<size_t>(group.world()));
}

std::vector<bool> OptimizerShards::owned() const {
  std::vector<bool> out(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) out[k] = owner_[k] == group_.rank();
  return out;
}

// Allgathers of equal slots, each rank's parameters packed in order, in rounds of at most a slot of
// elements a rank: the buffer stays small next to the optimizer state sharding saves.
void OptimizerShards::gather_parameters() {
  const int64_t slot = static_cast<int64_t>(buffer_.size()) / group_.world();
  const int64_t rounds = (*std::max_element(elements_.begin(), elements_.end()) + slot - 1) / slot;
  // Calls fn(parameter data, buffer slot, count) for rank r's elements [lo, lo + slot) of this round.
  auto for_each_of = [&](int rank, int64_t lo, auto&& fn) {
    float* at = buffer_.data() + slot * rank;
    int64_t start = 0;  // of the current parameter in rank r's sequence
    for (size_t k = 0; k < params_.size() && start < lo + slot; ++k) {
      if (owner_[k] != rank) continue;
      const int64_t n = params_[k].value.numel(), from = std::max(lo, start), to = std::min(lo + slot, start + n);
      if (from < to) fn(params_[k].value.data<float>() + (from - start), at + (from - lo), static_cast<size_t>(to - from));
      start += n;
    }
  };
  float* mine = buffer_.data() + slot * group_.rank();
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t lo = round * slot;
    for_each_of(group_.rank(), lo, [](const float* p, float* at, size_t n) { std::memcpy(at, p, n * sizeof(float)); });
    group_.allgather(mine, buffer_.data(), static_cast<size_t>(slot) * sizeof(float),
                     fmt::format("updated parameters of every shard, part {} of {}", round + 1, rounds));
    for (int r = 0; r < group_.world(); ++r)
      if (r != group_.rank()) for_each_of(r, lo, [](float* p, const float* at, size_t n) { std::memcpy(p, at, n * sizeof(float)); });
  }
}

// Each rank's state is sent as a tensor archive (the checkpoint's own encoding, so names, shapes and
// dtypes travel with it), padded to the longest; a checkpoint is rare enough for two collectives.
// Copies are dropped as soon as they are sent: rank 0 holds the whole state only while it saves.
std::map<std::string, Tensor> OptimizerShards::gather_state(std::map<std::string, Tensor> mine) {
  std::string bytes = io::encode_tensors("optimizer shard", mine, {});
  const bool root = group_.rank() == 0;
  if (!root) mine.clear();
  const size_t world = static_cast<size_t>(group_.world());
  std::vector<uint64_t> sizes(world);
  const uint64_t my_size = bytes.size();
  group_.allgather(&my_size, sizes.data(), sizeof my_size, "optimizer state sizes, for a checkpoint");
  const uint64_t longest = *std::max_element(sizes.begin(), sizes.end());
  bytes.resize(longest);
  std::string all(root ? longest * world : 0, '\0');
  group_.gather(bytes.data(), root ? all.data() : nullptr, longest, 0, "optimizer state of every shard, for a checkpoint");
  std::string().swap(bytes);
  for (size_t r = 1; r < world && root; ++r) {  // rank 0's own shard is `mine`
    io::TensorArchive a = io::parse_tensors(all.substr(r * longest, sizes[r]), fmt::format("the optimizer state of rank {}", r));
    mine.merge(a.tensors);  // "step" is the same on every rank; rank 0's is kept
  }
  return mine;
}

}  // namespace pd::dist
