// Device memory: one Allocator per device type, found by place. The CPU's is a caching allocator: freed
// blocks are kept in size-class bins and handed out again, so a training loop that allocates the same
// shapes every step stops calling malloc. A device backend (CUDA) registers its own at start-up; a place
// whose device this build lacks gets a clear error.
//
//   auto block = pd::allocator_for(pd::Place::cpu()).allocate(bytes);  // 64-byte aligned, freed with its last owner
//   pd::Tensor g = t.to(pd::Place::cuda(0));                          // pd/core/tensor.h
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pd/core/place.h"
#include "pd/core/shape.h"

namespace pd {

struct AllocatorStats {
  int64_t allocated_bytes = 0;       // in live blocks (size-class rounded)
  int64_t peak_allocated_bytes = 0;
  int64_t cached_bytes = 0;          // in free blocks kept for reuse
  int64_t peak_held_bytes = 0;       // peak of allocated + cached: what the allocator took from the system
  int64_t system_allocations = 0;    // calls that reached the system allocator
  int64_t cache_hits = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
  virtual void empty_cache() = 0;  // returns every cached block to the system
  // Copies between this device's memory and the host's (plain memcpy on the CPU).
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) const = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) const = 0;
  // Gathers the strided view at `src` (element size `elem`, strides in elements) of this device's
  // memory into contiguous `dst` on the same device.
  virtual void copy_strided(void* dst, const void* src, size_t elem, const Shape& shape, const Shape& strides) const = 0;
  // The stream this device's kernels enqueue on (null on the CPU), and waiting until it is idle.
  virtual void* stream() const { return nullptr; }
  virtual void synchronize() const {}
};

class CachingAllocator final : public Allocator {
 public:
  std::shared_ptr<void> allocate(size_t bytes) override;
  AllocatorStats stats() const override;
  void reset_peak() override;
  void empty_cache() override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) const override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) const override;
  void copy_strided(void* dst, const void* src, size_t elem, const Shape& shape, const Shape& strides) const override;
};

CachingAllocator& cpu_allocator();

// The allocator of `place`'s device; throws pd::Error (kNotImplemented) naming the place when this build
// has none for it (a build without CUDA asked for cuda:0).
Allocator& allocator_for(Place place);
// A device backend's allocators, one per device index (the CPU's is built in). Passing null removes
// the registration (tests).
using AllocatorFactory = Allocator* (*)(int index);
void register_allocator(DeviceType type, AllocatorFactory factory);

// How many devices of `type` this process can use: 1 for the CPU; for CUDA, 0 when this build has no
// CUDA backend or the driver reports any error (no GPU, no driver), never an exception.
int device_count(DeviceType type);
using DeviceCountFn = int (*)();
// "cpu", "cuda" (= cuda:0) or "cuda:N", checked against the devices this process has; throws pd::Error
// saying what is missing (no CUDA in this build, no usable GPU, an index out of range).
Place parse_place(const std::string& text);
void register_device_count(DeviceType type, DeviceCountFn fn);

}  // namespace pd
