#include "pd/dist/optimizer_shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "pd/core/error.h"

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
  slot_ = std::max<int64_t>(1, slot_elements);
}

std::vector<bool> OptimizerShards::owned() const {
  std::vector<bool> out(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) out[k] = owner_[k] == group_.rank();
  return out;
}

// Each rank's segments form one stream of floats; round after round, every rank sends the next slot
// of its stream (allgather, or gather to `root`), and the receivers copy each rank's slot into that
// rank's segments. The buffer is world x slot, whatever the streams' length.
void OptimizerShards::exchange(const std::function<std::vector<Segment>(int rank)>& segments_of, int64_t longest, int root,
                               const std::string& what) {
  const int world = group_.world(), me = group_.rank();
  const bool receive = root < 0 || root == me;
  const int64_t slot = std::min(slot_, std::max<int64_t>(1, longest));
  const int64_t rounds = (longest + slot - 1) / slot;
  buffer_.resize(static_cast<size_t>(slot * world));
  std::vector<std::vector<Segment>> streams(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r)
    if (r == me || receive) streams[r] = segments_of(r);
  // copy(segment data, slot data, count) for rank r's elements [lo, lo + slot).
  auto walk = [&](int r, int64_t lo, auto&& copy) {
    float* at = buffer_.data() + slot * r;
    int64_t start = 0;  // of the current segment in the stream
    for (const Segment& s : streams[r]) {
      if (start >= lo + slot) break;
      const int64_t from = std::max(lo, start), to = std::min(lo + slot, start + s.n);
      if (from < to) copy(s.data + (from - start), at + (from - lo), static_cast<size_t>(to - from));
      start += s.n;
    }
  };
  float* mine = buffer_.data() + slot * me;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t lo = round * slot;
    walk(me, lo, [](const float* seg, float* at, size_t n) { std::memcpy(at, seg, n * sizeof(float)); });
    const std::string part = fmt::format("{}, part {} of {}", what, round + 1, rounds);
    if (root < 0) group_.allgather(mine, buffer_.data(), static_cast<size_t>(slot) * sizeof(float), part);
    else group_.gather(mine, receive ? buffer_.data() : nullptr, static_cast<size_t>(slot) * sizeof(float), root, part);
    if (!receive) continue;
    for (int r = 0; r < world; ++r)
      if (r != me) walk(r, lo, [](float* seg, const float* at, size_t n) { std::memcpy(seg, at, n * sizeof(float)); });
  }
}

void OptimizerShards::gather_parameters() {
  exchange(
      [&](int r) {
        std::vector<Segment> out;
        for (size_t k = 0; k < params_.size(); ++k)
          if (owner_[k] == r) out.push_back({params_[k].value.data<float>(), params_[k].value.numel()});
        return out;
      },
      *std::max_element(elements_.begin(), elements_.end()), -1, "updated parameters of every shard");
}

// Rank 0 makes the tensors of the other ranks' entries and receives into them; nothing is encoded,
// and no rank copies its own state (the moments are read in place).
std::map<std::string, Tensor> OptimizerShards::gather_state(const std::map<std::string, Tensor>& mine,
                                                            const std::vector<std::string>& suffixes) {
  const bool root = group_.rank() == 0;
  std::map<std::string, Tensor> whole;
  if (root) whole = mine;
  auto entry = [&](size_t k, const std::string& suffix) -> Tensor {
    const std::string key = params_[k].name + "." + suffix;
    if (owner_[k] == group_.rank()) {
      auto it = mine.find(key);
      PD_CHECK(it != mine.end() && it->second.numel() == params_[k].value.numel() && it->second.dtype() == DType::f32,
               ErrorCode::kInvalidArgument, "sharding: this rank's optimizer state lacks '{}' (or it is not f32 like its parameter)",
               key);
      return it->second;
    }
    return whole[key] = Tensor::empty(params_[k].value.shape(), DType::f32);
  };
  exchange(
      [&](int r) {
        std::vector<Segment> out;
        for (size_t k = 0; k < params_.size(); ++k)
          if (owner_[k] == r)
            for (const auto& suffix : suffixes) {
              Tensor t = entry(k, suffix);
              out.push_back({t.data<float>(), t.numel()});
            }
        return out;
      },
      *std::max_element(elements_.begin(), elements_.end()) * static_cast<int64_t>(suffixes.size()), 0,
      "optimizer state of every shard, for a checkpoint");
  return whole;
}

}  // namespace pd::dist
