// Shared plumbing for the oneDNN CPU kernels: the engine, a per-thread stream, plain memory
// descriptors built from pd shapes, and the primitive cache (creating primitive descriptors is
// far more expensive than executing them, so every kernel looks its primitives up by a key).
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>

#include "cpu/onednn/onednn_cache.h"
#include "pd/core/error.h"
#include "pd/core/packed_weights.h"
#include "pd/core/tensor.h"
#include "pd/core/threads.h"

namespace pd::kernels::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

dnnl::engine& cpu_engine();
// oneDNN streams are not thread-safe; one per thread avoids locking around execute().
// The thread's stream, for running a primitive (notes that OpenMP's team may wake: pd/core/thread_pool.h).
dnnl::stream& cpu_stream();
// Waits for what the thread's stream runs.
void wait_for_primitives();

// Shape -> oneDNN dims; a 0-D shape becomes {1} because oneDNN has no 0-D memory.
dims to_dims(const Shape& shape);
// oneDNN describes at most DNNL_MAX_NDIMS (12) dims: kernels whose descriptors follow the tensor's rank
// hand higher ranks to the reference kernel, as they do for other shapes oneDNN serves badly.
inline bool beyond_onednn_rank(int64_t rank) { return rank > DNNL_MAX_NDIMS; }

// Prepends 1s so that `d` has `rank` dims (NumPy right alignment).
dims pad_left(dims d, size_t rank);
// Row-major tag for a rank (a, ab, abc, ...).
tag plain_tag(size_t rank);
// Contiguous row-major f32 descriptor.
dnnl::memory::desc plain_desc(const dims& d);
// (pd::Shape and dims are the same vector type, so to_dims() is spelled out at call sites.)
// A memory object over a tensor's own buffer (no copy).
inline dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, cpu_engine(), static_cast<void*>(t.data<float>()));
}
// "[2,3,4]" for cache keys.
std::string dims_key(const dims& d);

class PrimitiveCache {
 public:
  static PrimitiveCache& instance();

  // Returns the entry stored under `key`, building it with `factory()` on a miss. The factory
  // runs outside the lock so that slow primitive creation does not serialise other threads;
  // if two threads race on one key the first insertion wins.
  template <typename T, typename F>
  std::shared_ptr<T> get_or_create(const std::string& key, F&& factory) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) return std::static_pointer_cast<T>(it->second);
    }
    auto made = std::make_shared<T>(factory());
    std::lock_guard<std::mutex> lock(mutex_);
    ++created_;
    // A capped map cleared when full: cheap, and real workloads use few distinct shapes.
    if (entries_.size() >= kCapacity) entries_.clear();
    auto [it, inserted] = entries_.emplace(key, made);
    return std::static_pointer_cast<T>(it->second);
  }

  int64_t created() const;
  void clear();

 private:
  static constexpr size_t kCapacity = 1024;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<void>> entries_;
  int64_t created_ = 0;
};

template <typename T, typename F>
std::shared_ptr<T> cached(const std::string& key, F&& factory) {
  return PrimitiveCache::instance().get_or_create<T>(key, std::forward<F>(factory));
}

// A reorder between a user (plain) layout and the layout a primitive chose; `prim` is empty when
// they match, so the kernel uses the user buffer directly.
struct OptionalReorder {
  dnnl::memory::desc from, to;
  std::shared_ptr<dnnl::reorder> prim;
  static OptionalReorder make(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
};
// Input: `user` itself, or a fresh buffer in `r.to` filled from `user`.
dnnl::memory reorder_in(const OptionalReorder& r, const dnnl::memory& user);
// A weight input: like reorder_in, but a weight `cache` (the kernel's ctx.packed) holds as constant (an
// Executor's param in inference mode, pd/core/packed_weights.h) is reordered once and kept under `key`
// (which must identify the primitive, so r.to is fixed by it).
dnnl::memory weights_in(PackedWeights* cache, const OptionalReorder& r, const Tensor& weight, const dnnl::memory& user,
                        const std::string& key);
// The same with the user memory made only when it is needed (not on a cache hit): for a weight the
// kernel transforms before the reorder.
dnnl::memory weights_in(PackedWeights* cache, const OptionalReorder& r, const Tensor& weight,
                        const std::function<dnnl::memory()>& user, const std::string& key);
// Output: `user` itself, or a fresh buffer in `r.from` for the primitive to write ...
dnnl::memory output_buffer(const OptionalReorder& r, const dnnl::memory& user);
// ... which reorder_out then copies into `user` (a no-op when they are the same memory).
void reorder_out(const OptionalReorder& r, const dnnl::memory& produced, const dnnl::memory& user);

// A buffer for an intermediate layout, from the caching allocator rather than oneDNN's malloc: fresh
// pages for every reorder of every conv made page faults a sixth of a ResNet step. It stays valid until
// the enclosing guarded() returns.
dnnl::memory scratch_memory(const dnnl::memory::desc& md);
// A buffer from the caching allocator that `held` keeps: for work on the kernels' pool, whose workers
// must not take scratch_memory's (those belong to the thread that runs guarded()).
dnnl::memory held_memory(const dnnl::memory::desc& md, std::vector<std::shared_ptr<void>>& held);
// Primitive attributes asking for the scratchpad to be passed in (DNNL_ARG_SCRATCHPAD from scratch_memory).
dnnl::primitive_attr user_scratchpad();
void release_scratch();

using pd::OneThreadIf;  // pd/core/threads.h

// Runs `prim` with `args` and waits for it, on the calling thread alone when `one_thread` (a part of a
// kernel's work on the kernels' pool; the primitive must have been made for one thread too). A non-empty
// `scratchpad` (user scratchpad mode) gets a buffer of its own from the caching allocator for this call:
// scratch_memory's buffers belong to the thread that runs guarded(), not to the pool's workers.
void run_primitive(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory>& args,
                   const dnnl::memory::desc& scratchpad = {}, bool one_thread = true);

// Runs `body`, turning oneDNN failures into pd::Error naming the op.
template <typename F>
void guarded(const char* op, F&& body) {
  struct Release {
    ~Release() { release_scratch(); }
  } release;
  try {
    body();
    wait_for_primitives();  // results must be visible when the kernel returns, whatever the runtime
  } catch (const dnnl::error& e) {
    ::pd::raise(ErrorCode::kInternal, "{} (onednn): {}", op, e.what());
  }
}

}  // namespace pd::kernels::onednn
