#include "cpu/onednn/onednn_common.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "pd/core/allocator.h"
#include "pd/core/packed_weights.h"
#include "pd/core/thread_pool.h"

namespace pd::kernels::onednn {

namespace {

// PD_CPU_ISA narrows oneDNN's code too, so that one machine runs the kernels a narrower CPU would
// (the int8 kernels differ most: without VNNI they take vpmaddubsw). It must be set before oneDNN
// generates its first kernel, which the engine's creation precedes.
void narrow_onednn_isa() {
  const char* isa = std::getenv("PD_CPU_ISA");
  const std::string_view narrowed(isa ? isa : "");
  if (narrowed == "avx2") dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
  else if (narrowed == "baseline") dnnl::set_max_cpu_isa(dnnl::cpu_isa::sse41);
}

}  // namespace

dnnl::engine& cpu_engine() {
  static dnnl::engine engine = [] {
    narrow_onednn_isa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

namespace {
dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}
}  // namespace

dnnl::stream& cpu_stream() {
  // Every primitive runs on this stream; one that runs on more than one thread wakes OpenMP's team.
  if (omp_get_max_threads() > 1 && !omp_in_parallel()) note_openmp_team_used();
  return thread_stream();
}

void wait_for_primitives() { thread_stream().wait(); }

dims to_dims(const Shape& shape) {
  if (shape.empty()) return {1};
  return dims(shape.begin(), shape.end());
}

dims pad_left(dims d, size_t rank) {
  if (d.size() < rank) d.insert(d.begin(), rank - d.size(), 1);
  return d;
}

tag plain_tag(size_t rank) {
  switch (rank) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    case 6: return tag::abcdef;
    default: return tag::undef;
  }
}

dnnl::memory::desc plain_desc(const dims& d) {
  tag t = plain_tag(d.size());
  if (t != tag::undef) return dnnl::memory::desc(d, dt::f32, t);
  // Ranks without a named tag: spell out the row-major strides.
  dims strides(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(d[i], 1);
  return dnnl::memory::desc(d, dt::f32, strides);
}

std::string dims_key(const dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

PrimitiveCache& PrimitiveCache::instance() {
  static PrimitiveCache cache;
  return cache;
}

int64_t PrimitiveCache::created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_;
}

void PrimitiveCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
}

OptionalReorder OptionalReorder::make(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  OptionalReorder r{from, to, nullptr};
  if (from != to) {
    r.prim = std::make_shared<dnnl::reorder>(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to));
  }
  return r;
}

namespace {
thread_local std::vector<std::shared_ptr<void>> g_scratch;
}  // namespace

dnnl::memory scratch_memory(const dnnl::memory::desc& md) {
  g_scratch.push_back(cpu_allocator().allocate(md.get_size()));
  return dnnl::memory(md, cpu_engine(), g_scratch.back().get());
}

void release_scratch() { g_scratch.clear(); }

dnnl::memory held_memory(const dnnl::memory::desc& md, std::vector<std::shared_ptr<void>>& held) {
  held.push_back(cpu_allocator().allocate(md.get_size()));
  return dnnl::memory(md, cpu_engine(), held.back().get());
}

void run_primitive(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory>& args, const dnnl::memory::desc& scratchpad,
                   bool one_thread) {
  OneThreadIf single(one_thread);
  std::shared_ptr<void> buffer;
  if (scratchpad.get_size() > 0) {
    buffer = cpu_allocator().allocate(scratchpad.get_size());
    args.insert_or_assign(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, cpu_engine(), buffer.get()));
  }
  prim.execute(cpu_stream(), args);
  wait_for_primitives();
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory reorder_in(const OptionalReorder& r, const dnnl::memory& user) {
  if (!r.prim) return user;
  dnnl::memory src = user;  // handles share the buffer; execute() wants non-const refs
  dnnl::memory dst = scratch_memory(r.to);
  r.prim->execute(cpu_stream(), src, dst);
  return dst;
}

dnnl::memory weights_in(PackedWeights* cache, const OptionalReorder& r, const Tensor& weight, const dnnl::memory& user,
                        const std::string& key) {
  return weights_in(cache, r, weight, [&] { return user; }, key);
}

dnnl::memory weights_in(PackedWeights* cache, const OptionalReorder& r, const Tensor& weight,
                        const std::function<dnnl::memory()>& user, const std::string& key) {
  if (!r.prim || !cache || !cache->is_constant(weight)) return reorder_in(r, user());
  const std::string k = fmt::format("onednn:{}:{}:{}", static_cast<const void*>(weight.storage().get()), weight.offset(), key);
  if (std::shared_ptr<void> hit = cache->find(k)) return *static_cast<dnnl::memory*>(hit.get());
  auto packed = std::make_shared<dnnl::memory>(r.to, cpu_engine());  // oneDNN's own buffer, kept by the cache
  dnnl::memory src = user();
  {
    // On one thread: it runs once, and on OpenMP's team it would mark the team awake, which sends the
    // linears of the next millisecond there (matmul_common.h), each marking it again, run after run.
    OneThreadIf single(true);
    r.prim->execute(cpu_stream(), src, *packed);
    wait_for_primitives();
  }
  cache->store(k, packed);
  return *packed;
}

dnnl::memory output_buffer(const OptionalReorder& r, const dnnl::memory& user) {
  return r.prim ? scratch_memory(r.from) : user;
}

void reorder_out(const OptionalReorder& r, const dnnl::memory& produced, const dnnl::memory& user) {
  if (!r.prim) return;
  dnnl::memory src = produced, dst = user;
  r.prim->execute(cpu_stream(), src, dst);
}

int64_t onednn_primitives_created() { return PrimitiveCache::instance().created(); }

void onednn_clear_primitive_cache() { PrimitiveCache::instance().clear(); }

}  // namespace pd::kernels::onednn
