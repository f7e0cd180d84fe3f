#include "pd/core/packed_weights.h"

#include <algorithm>

namespace pd {
namespace {
thread_local PackedWeights* current = nullptr;
}  // namespace

void PackedWeights::declare_constants(const std::vector<Tensor>& constants) {
  for (const Tensor& t : constants) {
    if (!t.defined()) continue;
    const auto at = std::lower_bound(constants_.begin(), constants_.end(), t.storage().get());
    if (at != constants_.end() && *at == t.storage().get()) continue;
    constants_.insert(at, t.storage().get());
    alive_.push_back(t.storage());
  }
}

bool PackedWeights::is_constant(const Tensor& t) const {
  return t.defined() && std::binary_search(constants_.begin(), constants_.end(), t.storage().get());
}

std::shared_ptr<void> PackedWeights::find(const std::string& key) const {
  auto it = packed_.find(key);
  return it == packed_.end() ? nullptr : it->second;
}

void PackedWeights::store(const std::string& key, std::shared_ptr<void> packed) { packed_[key] = std::move(packed); }

bool PackedKey::add_constant(const PackedWeights& cache, const Tensor& t) {
  if (!t.defined()) {
    add(static_cast<const void*>(nullptr));
    return true;
  }
  if (!cache.is_constant(t)) return false;
  add(static_cast<const void*>(t.storage().get()));
  add(t.offset());
  return true;
}

void PackedKey::add(const std::vector<int64_t>& v) {
  add(v.size());
  key_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
}

void PackedKey::add(const std::string& s) {
  add(s.size());
  key_ += s;
}

PackedWeights* current_packed_weights() { return current; }

PackedWeightsScope::PackedWeightsScope(PackedWeights* cache) : previous_(current) { current = cache; }
PackedWeightsScope::~PackedWeightsScope() { current = previous_; }

}  // namespace pd
