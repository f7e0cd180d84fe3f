#include "pd/ops/op_profiler.h"

#include "pd/ops/op_observer.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>

namespace pd::profiler {
namespace detail {

std::atomic<bool> g_profiling{false};

struct Frame {
  const char* name;
  int64_t start;
  int64_t child_ns;  // time spent in nested op calls, excluded from this op
  Frame* parent;
};

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Each thread records into its own table (no lock per op); snapshots lock to read all tables.
struct Table {
  std::mutex mu;
  std::map<const char*, OpStat> stats;  // keyed by the static name pointer: no string work per call
};

std::mutex g_tables_mu;
std::vector<std::shared_ptr<Table>>& tables() {
  static std::vector<std::shared_ptr<Table>> t;
  return t;
}

struct ThreadState {
  std::shared_ptr<Table> table = std::make_shared<Table>();
  Frame frames[64];  // op nesting is shallow; deeper calls go untimed rather than allocate
  int depth = 0;
  Frame* top = nullptr;
  ThreadState() {
    std::lock_guard<std::mutex> lock(g_tables_mu);
    tables().push_back(table);
  }
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

}  // namespace

Frame* push_frame(const char* name) {
  ThreadState& s = state();
  if (s.depth >= 64) return nullptr;
  Frame* f = &s.frames[s.depth++];
  *f = Frame{name, 0, 0, s.top};
  s.top = f;
  f->start = now_ns();
  return f;
}

void pop_frame(Frame* f) {
  int64_t total = now_ns() - f->start;
  ThreadState& s = state();
  if (f->parent) f->parent->child_ns += total;
  s.top = f->parent;
  --s.depth;
  std::lock_guard<std::mutex> lock(s.table->mu);  // uncontended except during a snapshot
  OpStat& st = s.table->stats[f->name];
  st.calls += 1;
  st.ns += total - f->child_ns;
}

}  // namespace detail

namespace {

// Opens a timing frame around every op call the hook reports on this thread.
class ProfilingObserver final : public OpObserver {
 public:
  void begin(const char* op) override { frames_[depth_++ & 63] = detail::push_frame(op); }
  void finish(const char*) override {
    detail::Frame* f = frames_[--depth_ & 63];
    if (f) detail::pop_frame(f);
  }

 private:
  detail::Frame* frames_[64] = {};
  int depth_ = 0;
};

ProfilingObserver& thread_observer() {
  thread_local ProfilingObserver observer;
  return observer;
}

}  // namespace

void set_profiling(bool enabled) {
  detail::g_profiling.store(enabled);
  OpObserver*& current = current_op_observer();
  if (enabled) current = &thread_observer();
  else if (current == &thread_observer()) current = nullptr;
}
bool profiling() { return detail::g_profiling.load(); }

void profile_reset() {
  std::lock_guard<std::mutex> lock(detail::g_tables_mu);
  for (auto& t : detail::tables()) {
    std::lock_guard<std::mutex> l(t->mu);
    t->stats.clear();
  }
}

std::vector<OpStat> profile_snapshot() {
  std::map<std::string, OpStat> by_name;
  std::lock_guard<std::mutex> lock(detail::g_tables_mu);
  for (auto& t : detail::tables()) {
    std::lock_guard<std::mutex> l(t->mu);
    for (auto& [key, st] : t->stats) {
      OpStat& o = by_name[key];
      o.name = key;
      o.calls += st.calls;
      o.ns += st.ns;
    }
  }
  std::vector<OpStat> out;
  for (auto& [k, v] : by_name) out.push_back(v);
  return out;
}

double timer_overhead_ns() {
  static const char* kName = "__pd_bench_overhead";
  bool was = profiling();
  set_profiling(true);
  std::vector<double> samples;
  for (int r = 0; r < 21; ++r) {
    constexpr int kN = 2000;
    int64_t t0 = detail::now_ns();
    for (int i = 0; i < kN; ++i) OpObserverScope scope(kName);
    samples.push_back(double(detail::now_ns() - t0) / kN);
  }
  set_profiling(was);
  // Drop the calibration entries from this thread's table.
  {
    auto& s = detail::state();
    std::lock_guard<std::mutex> l(s.table->mu);
    s.table->stats.erase(kName);
  }
  std::nth_element(samples.begin(), samples.begin() + 10, samples.end());
  return samples[10];
}

}  // namespace pd::profiler
