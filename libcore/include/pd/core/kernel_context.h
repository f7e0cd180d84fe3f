// KernelContext: what a kernel may know about where and how it runs, handed to every kernel as its
// first argument (the signatures pd-codegen writes into kernels.h) instead of read from global or
// thread-local state, so that a CUDA kernel's stream and an executor's packed weights reach the kernel
// the same way. The generated op API builds it once per call (pd::detail::kernel_context).
//
//   template <typename T>
//   void conv2d(const KernelContext& ctx, const Tensor& x, ..., Tensor& out) {
//     if (ctx.packed && ctx.packed->is_constant(weight)) { ... reuse a packed copy ... }
//   }
#pragma once
#include <initializer_list>
#include <memory>
#include <vector>

#include "pd/core/packed_weights.h"
#include "pd/core/place.h"

namespace pd {

// What a kernel derived on an earlier call of the same op of the same program (its packed weights, an
// epilogue made from constant scales, a prepared primitive), kept in that op's slot of the executor, so
// that a call finds it without building a key. The executor hands out slots only in inference mode and
// empties them all when a param is replaced. A kernel keeps only what it derived from constants
// (ctx.packed->is_constant) and checks whatever else it depends on (input shapes) before reusing it.
//
//   if (const Prepared* p = ctx.memo ? ctx.memo->get<Prepared>() : nullptr; p && p->shape == x.shape()) ...
class OpMemo {
 public:
  template <typename T>
  T* get() const {
    for (const Entry& e : entries_)
      if (e.type == tag<T>()) return static_cast<T*>(e.value.get());
    return nullptr;
  }
  template <typename T>
  T& set(std::shared_ptr<T> value) {
    T& held = *value;
    for (Entry& e : entries_)
      if (e.type == tag<T>()) {
        e.value = std::move(value);
        return held;
      }
    entries_.push_back({std::move(value), tag<T>()});
    return held;
  }
  void clear() { entries_.clear(); }

 private:
  // One value per type, so that a kernel which tries a direct kernel first (keeping its decision here)
  // and then runs its own call can keep both. An op holds one or two: a linear search.
  struct Entry {
    std::shared_ptr<void> value;
    const void* type;
  };
  template <typename T>
  static const void* tag() {
    static const char id = 0;
    return &id;
  }
  std::vector<Entry> entries_;
};

struct KernelContext;

// The prepared call of a kernel (what `make` derives from the call's tensors), kept in the op's memo
// slot when every tensor of `constants` is undefined or a constant of ctx.packed, and reused while the
// call site (`kind`, a string literal naming it), the call's `variant` (a path, an ISA) and `shape`
// (the input extents it depends on) stay the same, so that a kernel calling another kernel with its
// context never reads the other's call as its own. Without a slot, or with inputs that are not
// constants, `make` runs on every call.
template <typename T, typename Make>
std::shared_ptr<const T> memoized(const KernelContext& ctx, const char* kind, int64_t variant, const Shape& shape,
                                  std::initializer_list<const Tensor*> constants, Make make);

struct KernelContext {
  Place place = Place::cpu();       // where the inputs and outputs live
  void* stream = nullptr;           // the device stream kernels enqueue on (CUDA); null on the CPU
  PackedWeights* packed = nullptr;  // a cache for weights the caller declared constant (an Executor
                                    // in inference mode), or null: pack nothing across calls
  int threads = 1;                  // CPU threads the kernel may use (pd::num_threads() by default)
  OpMemo* memo = nullptr;           // this op's slot in an executor (inference), or null
};

template <typename T, typename Make>
std::shared_ptr<const T> memoized(const KernelContext& ctx, const char* kind, int64_t variant, const Shape& shape,
                                  std::initializer_list<const Tensor*> constants, Make make) {
  struct Kept {
    std::shared_ptr<const T> call;
    const char* kind;
    int64_t variant;
    Shape shape;
  };
  if (ctx.memo)
    if (const Kept* kept = ctx.memo->get<Kept>(); kept && kept->kind == kind && kept->variant == variant && kept->shape == shape)
      return kept->call;
  std::shared_ptr<const T> call = make();
  if (!ctx.memo || !ctx.packed) return call;
  for (const Tensor* t : constants)
    if (t->defined() && !ctx.packed->is_constant(*t)) return call;
  ctx.memo->set(std::make_shared<Kept>(Kept{call, kind, variant, shape}));
  return call;
}

// A kernel's address with its signature erased, for tables that hold kernels of many ops (an
// ExecPlan binds one per op); cast back to the op's own kernel type (registry.h) to call it.
using AnyKernel = void (*)();

// How the op API runs an op for an executor: the kernel its ExecPlan bound (null: the registry picks
// on each call) and the op's memo slot (null: none).
struct BoundCall {
  AnyKernel kernel = nullptr;
  OpMemo* memo = nullptr;
};

}  // namespace pd
