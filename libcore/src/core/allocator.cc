// Size classes: 64-byte granularity below 1 MiB, 1 MiB granularity above. A freed block goes back
// to the free list of its class; allocate() takes from that list before asking the system, and when
// it is empty, from the smallest cached block of a larger class up to kMaxOversize times the size.
// Without that second step, a pass whose values shrink layer by layer (an evaluation batch through
// 28x28, 14x14 and 7x7 maps) kept every layer's blocks: the residual example's peak RSS was its
// evaluation's cache, 380 MiB, not its training step.
#include "pd/core/allocator.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "pd/core/error.h"
#include "strided_copy.h"

namespace pd {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kSmall = 1 << 20;
// A block serves requests down to a quarter of its size: its pages are resident already, so taking it
// costs no memory, while a fresh block would add the request's size.
constexpr size_t kMaxOversize = 4;

size_t size_class(size_t bytes) {
  if (bytes == 0) bytes = 1;
  size_t unit = bytes < kSmall ? kAlign : kSmall;
  return (bytes + unit - 1) / unit * unit;
}

struct State {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> free_blocks;
  AllocatorStats stats;
};

State& state() {
  static State* s = new State();  // never destroyed: blocks may be freed during static destruction
  return *s;
}

void release(void* p, size_t cls) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.free_blocks[cls].push_back(p);
  s.stats.allocated_bytes -= static_cast<int64_t>(cls);
  s.stats.cached_bytes += static_cast<int64_t>(cls);
}

}  // namespace

std::shared_ptr<void> CachingAllocator::allocate(size_t bytes) {
  // Beyond this, rounding up to a class (and the best-fit bound) would wrap around.
  PD_CHECK(bytes <= (size_t{1} << 60), ErrorCode::kInternal, "out of memory allocating {} bytes", bytes);
  size_t cls = size_class(bytes);
  State& s = state();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    // The first non-empty class at or above cls is the best fit. Emptied lists stay in the map with
    // their capacity: erasing them cost a map node and a vector's growth (three mallocs) every time a
    // block of a class that held one came back, and a batch-1 inference run frees most of its blocks.
    auto it = s.free_blocks.lower_bound(cls);
    while (it != s.free_blocks.end() && it->first / kMaxOversize <= cls && it->second.empty()) ++it;
    if (it != s.free_blocks.end() && it->first / kMaxOversize <= cls) {
      cls = it->first;
      p = it->second.back();
      it->second.pop_back();
      s.stats.cached_bytes -= static_cast<int64_t>(cls);
      ++s.stats.cache_hits;
      // A hit is counted under the same lock (one lock a call: small ops allocate on every run).
      s.stats.allocated_bytes += static_cast<int64_t>(cls);
      s.stats.peak_allocated_bytes = std::max(s.stats.peak_allocated_bytes, s.stats.allocated_bytes);
    }
  }
  if (p == nullptr) {
    p = std::aligned_alloc(kAlign, cls);
    if (p == nullptr) {
      empty_cache();
      p = std::aligned_alloc(kAlign, cls);
    }
    PD_CHECK(p != nullptr, ErrorCode::kInternal, "out of memory allocating {} bytes", bytes);
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.stats.system_allocations;
    s.stats.allocated_bytes += static_cast<int64_t>(cls);
    s.stats.peak_allocated_bytes = std::max(s.stats.peak_allocated_bytes, s.stats.allocated_bytes);
    s.stats.peak_held_bytes = std::max(s.stats.peak_held_bytes, s.stats.allocated_bytes + s.stats.cached_bytes);
  }
  return std::shared_ptr<void>(p, [cls](void* q) { release(q, cls); });
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().stats;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().stats.peak_allocated_bytes = state().stats.allocated_bytes;
  state().stats.peak_held_bytes = state().stats.allocated_bytes + state().stats.cached_bytes;
}

void CachingAllocator::empty_cache() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& [cls, blocks] : s.free_blocks)
    for (void* p : blocks) std::free(p);
  s.free_blocks.clear();
  s.stats.cached_bytes = 0;
}

void CachingAllocator::copy_to_host(void* host_dst, const void* src, size_t bytes) const {
  if (bytes) std::memcpy(host_dst, src, bytes);
}

void CachingAllocator::copy_from_host(void* dst, const void* host_src, size_t bytes) const {
  if (bytes) std::memcpy(dst, host_src, bytes);
}

void CachingAllocator::copy_strided(void* dst, const void* src, size_t elem, const Shape& shape,
                                    const Shape& strides) const {
  detail::copy_strided_host(dst, src, elem, shape, strides);
}

CachingAllocator& cpu_allocator() {
  static CachingAllocator a;
  return a;
}

namespace {

std::array<AllocatorFactory, 2>& factories() {
  static std::array<AllocatorFactory, 2> f{};  // by DeviceType; the CPU entry stays empty
  return f;
}

std::array<DeviceCountFn, 2>& device_counters() {
  static std::array<DeviceCountFn, 2> f{};
  return f;
}

}  // namespace

void register_allocator(DeviceType type, AllocatorFactory factory) {
  PD_CHECK(type != DeviceType::cpu, ErrorCode::kInvalidArgument, "register_allocator: the CPU allocator is built in");
  factories()[static_cast<size_t>(type)] = factory;
}

void register_device_count(DeviceType type, DeviceCountFn fn) {
  PD_CHECK(type != DeviceType::cpu, ErrorCode::kInvalidArgument, "register_device_count: the CPU is built in");
  device_counters()[static_cast<size_t>(type)] = fn;
}

int device_count(DeviceType type) {
  if (type == DeviceType::cpu) return 1;
  DeviceCountFn fn = device_counters()[static_cast<size_t>(type)];
  return fn ? fn() : 0;
}

Place parse_place(const std::string& text) {
  if (text == "cpu") return Place::cpu();
  int index = 0;
  if (text.rfind("cuda:", 0) == 0) {
    const std::string digits = text.substr(5);
    PD_CHECK(!digits.empty() && digits.size() < 4 && digits.find_first_not_of("0123456789") == std::string::npos,
             ErrorCode::kInvalidArgument, "device '{}': expected cpu, cuda or cuda:N", text);
    index = std::stoi(digits);
  } else {
    PD_CHECK(text == "cuda", ErrorCode::kInvalidArgument, "device '{}': expected cpu, cuda or cuda:N", text);
  }
  const int n = device_count(DeviceType::cuda);
  PD_CHECK(device_counters()[static_cast<size_t>(DeviceType::cuda)] != nullptr, ErrorCode::kNotImplemented,
           "device '{}': this build has no CUDA backend (built without nvcc); use cpu", text);
  PD_CHECK(n > 0, ErrorCode::kInvalidArgument, "device '{}': no usable CUDA GPU (the driver reports none)", text);
  PD_CHECK(index < n, ErrorCode::kInvalidArgument, "device '{}': this machine has {} CUDA device(s), cuda:0 to cuda:{}",
           text, n, n - 1);
  return Place::cuda(index);
}

Allocator& allocator_for(Place place) {
  if (place.is_cpu()) return cpu_allocator();
  AllocatorFactory f = factories()[static_cast<size_t>(place.type)];
  PD_CHECK(f != nullptr, ErrorCode::kNotImplemented,
           "place {} is not available: this build has no {} backend (it runs on cpu only)", place.str(),
           place.str().substr(0, place.str().find(':')));
  Allocator* a = f(place.index);
  PD_CHECK(a != nullptr, ErrorCode::kInvalidArgument, "place {} is not available: no such device", place.str());
  return *a;
}

}  // namespace pd
