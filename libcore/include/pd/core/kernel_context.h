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
#include "pd/core/packed_weights.h"
#include "pd/core/place.h"

namespace pd {

struct KernelContext {
  Place place = Place::cpu();       // where the inputs and outputs live
  void* stream = nullptr;           // the device stream kernels enqueue on (CUDA); null on the CPU
  PackedWeights* packed = nullptr;  // a cache for weights the caller declared constant (an Executor
                                    // in inference mode), or null: pack nothing across calls
  int threads = 1;                  // CPU threads the kernel may use (pd::num_threads() by default)
};

// A kernel's address with its signature erased, for tables that hold kernels of many ops (an
// ExecPlan binds one per op); cast back to the op's own kernel type (registry.h) to call it.
using AnyKernel = void (*)();

}  // namespace pd
