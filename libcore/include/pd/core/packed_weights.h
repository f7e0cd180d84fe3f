// Weights kept in a kernel's own layout across calls, as onnxruntime and Paddle Inference prepack
// theirs when a session is created. A kernel may only do so for a tensor the cache declares constant:
// the Executor, in inference mode, declares its Program's params for the length of a run and keeps
// the packed copies in its ExecPlan. (An Executor assumes its params are not written in place while it
// lives; a param replaced with set_param has new storage and is packed afresh.) Kernels get the cache
// as ctx.packed (pd/core/kernel_context.h); the scope below is how the op API finds it.
//
//   PackedWeights* cache = ctx.packed;
//   if (cache && cache->is_constant(w)) { auto hit = cache->find(key); ... cache->store(key, packed); }
#pragma once
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "pd/core/tensor.h"

namespace pd {

class PackedWeights {
 public:
  // The tensors that stay unchanged while they are declared; their storages are kept alive, so a
  // storage address in a key can never come to name another tensor.
  void declare_constants(const std::vector<Tensor>& constants);
  bool is_constant(const Tensor& t) const;

  // Packed copies by key. A key must name the constant's storage and offset and everything that
  // decides the packed layout.
  std::shared_ptr<void> find(const std::string& key) const;
  void store(const std::string& key, std::shared_ptr<void> packed);
  size_t size() const { return packed_.size(); }

 private:
  std::vector<const Storage*> constants_;  // sorted: is_constant is a binary search
  std::vector<std::shared_ptr<Storage>> alive_;
  std::unordered_map<std::string, std::shared_ptr<void>> packed_;
};

// The key of a prepared call (everything a kernel derives from its constant inputs, kept across calls):
// the constant tensors by storage address and offset (the cache keeps their storages alive, so an address
// never comes to name another tensor), everything else the call depends on by value, in binary.
class PackedKey {
 public:
  explicit PackedKey(const std::string& kind) : key_(kind + ':') {}
  // Adds t (an undefined tensor adds a marker); false when t is defined but not a constant of `cache`:
  // the call cannot be kept.
  bool add_constant(const PackedWeights& cache, const Tensor& t);
  template <typename T>
  void add(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    key_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void add(const std::vector<int64_t>& v);
  void add(const std::string& s);
  const std::string& str() const { return key_; }

 private:
  std::string key_;
};

// The calling thread's cache while a scope is open, else null. Read by the generated op API when it
// builds a kernel's context (pd::detail::kernel_context), not by kernels.
PackedWeights* current_packed_weights();

class PackedWeightsScope {
 public:
  explicit PackedWeightsScope(PackedWeights* cache);
  ~PackedWeightsScope();
  PackedWeightsScope(const PackedWeightsScope&) = delete;
  PackedWeightsScope& operator=(const PackedWeightsScope&) = delete;

 private:
  PackedWeights* previous_;
};

}  // namespace pd
