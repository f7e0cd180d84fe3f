// The caching CPU allocator: freed blocks are kept in size-class bins and handed out again,
// so a training loop that allocates the same shapes every step stops calling malloc.
//
//   auto block = pd::cpu_allocator().allocate(bytes);   // 64-byte aligned, freed when the last owner drops it
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace pd {

struct AllocatorStats {
  int64_t allocated_bytes = 0;       // in live blocks (size-class rounded)
  int64_t peak_allocated_bytes = 0;
  int64_t cached_bytes = 0;          // in free blocks kept for reuse
  int64_t system_allocations = 0;    // calls that reached the system allocator
  int64_t cache_hits = 0;
};

class CachingAllocator {
 public:
  std::shared_ptr<void> allocate(size_t bytes);
  AllocatorStats stats() const;
  void reset_peak();
  void empty_cache();  // returns every cached block to the system
};

CachingAllocator& cpu_allocator();

}  // namespace pd
