#include "pd/core/determinism.h"

#include <atomic>

#include "pd/core/error.h"

namespace pd {
namespace {
std::atomic<bool> g_deterministic{false};
}

void set_deterministic(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }
bool deterministic() { return g_deterministic.load(std::memory_order_relaxed); }

void require_nondeterministic_allowed(const char* op, const char* where) {
  PD_CHECK(!deterministic(), ErrorCode::kNotImplemented,
           "{}: its {} kernel adds with atomics, whose order varies between runs, and `deterministic: true` is set; "
           "run it on the CPU or turn the switch off",
           op, where);
}

}  // namespace pd
