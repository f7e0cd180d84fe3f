#include "pd/core/packed_weights.h"

namespace pd {
namespace {
thread_local PackedWeights* current = nullptr;
}  // namespace

void PackedWeights::declare_constants(const std::vector<Tensor>& constants) {
  for (const Tensor& t : constants) {
    if (!t.defined() || !constants_.insert(t.storage().get()).second) continue;
    alive_.push_back(t.storage());
  }
}

bool PackedWeights::is_constant(const Tensor& t) const { return t.defined() && constants_.count(t.storage().get()) > 0; }

std::shared_ptr<void> PackedWeights::find(const std::string& key) const {
  auto it = packed_.find(key);
  return it == packed_.end() ? nullptr : it->second;
}

void PackedWeights::store(const std::string& key, std::shared_ptr<void> packed) { packed_[key] = std::move(packed); }

PackedWeights* current_packed_weights() { return current; }

PackedWeightsScope::PackedWeightsScope(PackedWeights* cache) : previous_(current) { current = cache; }
PackedWeightsScope::~PackedWeightsScope() { current = previous_; }

}  // namespace pd
