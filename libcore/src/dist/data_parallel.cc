#include "pd/dist/data_parallel.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "op_api.h"
#include "pd/core/error.h"

namespace pd::dist {
namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  int x = 0;
  const char* end = v + std::strlen(v);
  auto [p, ec] = std::from_chars(v, end, x);
  PD_CHECK(ec == std::errc() && p == end && x >= lo && x <= hi, ErrorCode::kInvalidArgument,
           "environment variable {}='{}' is not an integer from {} to {} (pd-dist sets it; start distributed runs with "
           "pd-dist)",
           name, v, lo, hi);
  return x;
}

}  // namespace

std::optional<DistEnv> DistEnv::from_environment() {
  if (!std::getenv("WORLD_SIZE")) return std::nullopt;
  DistEnv e;
  e.world = env_int("WORLD_SIZE", 1, 1, 1 << 20);
  e.rank = env_int("RANK", -1, 0, e.world - 1);
  PD_CHECK(e.rank >= 0, ErrorCode::kInvalidArgument, "WORLD_SIZE is set ({}) but RANK is not; start distributed runs with pd-dist",
           e.world);
  e.local_rank = env_int("LOCAL_RANK", 0, 0, 1 << 20);
  e.restart = env_int("PD_DIST_RESTART", 0, 0, 1 << 20);
  e.master_host = env_or("MASTER_ADDR", "127.0.0.1");
  e.master_port = env_int("MASTER_PORT", -1, 1, 65535);
  const std::string store = env_or("PD_DIST_STORE", "");
  PD_CHECK(store.empty() || (store.rfind("file:", 0) == 0 && store.size() > 5), ErrorCode::kInvalidArgument,
           "environment variable PD_DIST_STORE='{}' is not file:DIR (pd-dist sets it; start distributed runs with pd-dist)", store);
  if (!store.empty()) e.store_dir = store.substr(5);
  PD_CHECK(e.master_port > 0 || e.world == 1 || !e.store_dir.empty(), ErrorCode::kInvalidArgument,
           "WORLD_SIZE is {} but MASTER_PORT is not set; start distributed runs with pd-dist", e.world);
  e.host = env_or("PD_DIST_HOST", "");
  e.timeout = std::chrono::seconds(env_int("PD_DIST_TIMEOUT", 60, 1, 1 << 24));
  e.status_file = env_or("PD_DIST_STATUS_FILE", "");
  return e;
}

DataParallel::DataParallel(const DistEnv& env) : env_(env) {
  if (env.store_dir.empty()) store_ = std::make_unique<StoreClient>(env.master_host, env.master_port, env.timeout);
  else store_ = std::make_unique<FileStore>(env.store_dir, env.timeout);
  group_ = make_gloo_group(*store_, group_options("gloo"));
}

// Every group of this rank: the job's rank, world, restart, address, timeout and status file; its own keys.
GroupOptions DataParallel::group_options(const std::string& name) const {
  return {.rank = env_.rank, .world = env_.world, .generation = env_.restart, .name = name, .host = env_.host,
          .timeout = env_.timeout, .status_file = env_.status_file};
}

std::unique_ptr<ProcessGroup> DataParallel::make_group(const std::string& name) {
  return make_gloo_group(*store_, group_options(name));
}

ProcessGroup& DataParallel::gradient_group(Place place) {
  if (place.is_cpu()) return *group_;
  if (!nccl_) nccl_ = make_nccl_group(*store_, group_options("nccl"), place.index);
  return *nccl_;
}

std::string DataParallel::broadcast_bytes(const std::string& bytes, const std::string& what) {
  uint64_t n = rank() == 0 ? bytes.size() : 0;
  group_->broadcast(&n, sizeof n, 0, what + ", size");
  std::string out = rank() == 0 ? bytes : std::string(n, '\0');
  if (n > 0) group_->broadcast(out.data(), n, 0, what);
  return out;
}

void DataParallel::sum(std::vector<double>& values, const std::string& what) {
  if (!values.empty()) group_->allreduce_sum(values.data(), values.size(), what);
}

// ---- GradientReducer ----

GradientReducer::GradientReducer(ProcessGroup& group, std::vector<train::NamedParam> params, size_t bucket_bytes)
    : group_(group), params_(std::move(params)) {
  where_.resize(params_.size());
  arrived_.assign(params_.size(), false);
  size_t bytes = bucket_bytes;  // start a bucket at the first parameter
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& v = params_[k].value;
    PD_CHECK(v.dtype() == DType::f32 && v.place() == params_.back().value.place(), ErrorCode::kNotImplemented,
             "data-parallel training averages f32 gradients of parameters on one place, but parameter '{}' is {} on {} ('{}' is "
             "on {})",
             params_[k].name, dtype_name(v.dtype()), v.place().str(), params_.back().name, params_.back().value.place().str());
    if (bytes >= bucket_bytes) {
      buckets_.emplace_back();
      bytes = 0;
    }
    Bucket& b = buckets_.back();
    where_[k] = {buckets_.size() - 1, b.params.size()};
    b.offsets.push_back(b.size);
    b.params.push_back(k);
    b.size += v.numel();
    bytes += static_cast<size_t>(v.numel()) * sizeof(float);
  }
  // Buckets live where the gradients do (the group reduces them there: Gloo on the CPU, NCCL on a GPU).
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.data = Tensor::empty({b.size}, DType::f32, params_.back().value.place());
  }
  for (size_t k = 0; k < params_.size(); ++k)
    params_[k].value.register_post_accumulate_grad_hook([this, k] { on_grad_ready(k); });
  thread_ = std::thread([this] { communicate(); });
}

GradientReducer::~GradientReducer() {
  for (auto& p : params_) p.value.clear_post_accumulate_grad_hooks();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GradientReducer::on_grad_ready(size_t k) {
  if (arrived_[k]) return;  // a second backward in one step adds nothing we have not packed
  arrived_[k] = true;
  const auto [bi, slot] = where_[k];
  Bucket& b = buckets_[bi];
  slot_of(b, slot).copy_(params_[k].value.grad());
  if (--b.pending == 0) mark_ready(b);
}

void GradientReducer::mark_ready(Bucket& b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    b.ready = true;
  }
  cv_.notify_all();
}

// A bucket's part for its slot-th parameter, shaped like the parameter (a view).
Tensor GradientReducer::slot_of(Bucket& b, size_t slot) const {
  const Shape& shape = params_[b.params[slot]].value.shape();
  return b.data.as_strided(shape, contiguous_strides(shape), b.offsets[slot]);
}

void GradientReducer::communicate() {
  for (;;) {
    size_t i = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || (next_to_reduce_ < buckets_.size() && buckets_[next_to_reduce_].ready); });
      if (stop_) return;
      i = next_to_reduce_;
    }
    Bucket& b = buckets_[i];
    try {
      group_.allreduce_sum(b.data.data<float>(), static_cast<size_t>(b.size),
                           fmt::format("gradients, bucket {} of {}", i + 1, buckets_.size()));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
      return;  // the group is unusable after a failure
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++next_to_reduce_;
    }
    cv_.notify_all();
  }
}

void GradientReducer::finish() {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (arrived_[k]) continue;
    arrived_[k] = true;
    const auto [bi, slot] = where_[k];
    Bucket& b = buckets_[bi];
    const Tensor& v = params_[k].value;
    slot_of(b, slot).copy_(ops::zeros(v.shape(), DType::f32).to(v.place()));
    if (--b.pending == 0) mark_ready(b);
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return error_ || next_to_reduce_ == buckets_.size(); });
    if (error_) std::rethrow_exception(error_);
  }
  // The mean: the sum scaled into a new gradient tensor (the bucket is refilled next step).
  const Tensor inv_world = Tensor::full_scalar(1.0 / group_.world(), DType::f32, params_.back().value.place());
  for (auto& b : buckets_)
    for (size_t s = 0; s < b.params.size(); ++s) params_[b.params[s]].value.set_grad(ops::mul(slot_of(b, s), inv_world));
  // Ready for the next step (the communication thread is idle: no bucket is ready).
  std::fill(arrived_.begin(), arrived_.end(), false);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.ready = false;
  }
  next_to_reduce_ = 0;
}

}  // namespace pd::dist
