// DataLoader: deterministic order and augmentation from (seed, epoch), batches built ahead by one
// background thread. Everything random comes from mt19937_64 with our own reductions, so results
// do not depend on the standard library's distributions.
#include <algorithm>
#include <optional>
#include <random>

#include "pd/data/loader.h"

namespace pd::data {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t mix(uint64_t a, uint64_t b) { return splitmix64(a ^ splitmix64(b + 0x632be59bd9b4e019ull)); }

// Unbiased integer in [0, bound) by rejection (std::uniform_int_distribution is implementation-defined).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  while (true) {
    const uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

void check_transform(const Transform& t, const Shape& shape) {
  switch (t.kind) {
    case Transform::Scale: return;
    case Transform::Normalize: {
      const int64_t channels = shape.empty() ? 1 : shape[0];
      const auto ok = [&](const std::vector<double>& v) {
        return v.size() == 1 || static_cast<int64_t>(v.size()) == channels;
      };
      PD_CHECK(ok(t.mean) && ok(t.std), ErrorCode::kInvalidArgument,
               "Normalize: mean and std need 1 or {} values (axis 0 of sample shape {}), got {} and {}", channels,
               shape_str(shape), t.mean.size(), t.std.size());
      for (double s : t.std) PD_CHECK(s != 0, ErrorCode::kInvalidArgument, "Normalize: std must be non-zero");
      return;
    }
    case Transform::RandomFlip:
      PD_CHECK(!shape.empty(), ErrorCode::kShape, "RandomFlip: sample must have at least 1 axis, got shape []");
      PD_CHECK(t.p >= 0 && t.p <= 1, ErrorCode::kInvalidArgument, "RandomFlip: p must be in [0, 1], got {}", t.p);
      return;
    case Transform::RandomCrop:
      PD_CHECK(shape.size() >= 2, ErrorCode::kShape, "RandomCrop: sample must have at least 2 axes, got shape {}",
               shape_str(shape));
      // More padding than the sample is wide crops windows of nothing but zeros.
      PD_CHECK(t.padding >= 0 && t.padding <= std::max(shape[shape.size() - 1], shape[shape.size() - 2]),
               ErrorCode::kInvalidArgument, "RandomCrop: padding must be in [0, {}] for samples of shape {}, got {}",
               std::max(shape[shape.size() - 1], shape[shape.size() - 2]), shape_str(shape), t.padding);
      return;
  }
  raise(ErrorCode::kInvalidArgument, "apply_transform: unknown transform kind {}", static_cast<int>(t.kind));
}

namespace {

// apply_transform without the check (done once, when the loader is made). The generator is seeded
// only for the random transforms: seeding an mt19937_64 fills 312 words, per sample and transform.
void apply_checked_transform(const Transform& t, float* sample, const Shape& sample_shape, uint64_t rng_seed) {
  const int64_t n = shape_numel(sample_shape);
  std::optional<std::mt19937_64> rng_state;
  auto rng = [&]() -> std::mt19937_64& { return rng_state ? *rng_state : rng_state.emplace(rng_seed); };
  switch (t.kind) {
    case Transform::Scale:
      for (int64_t i = 0; i < n; ++i) sample[i] = static_cast<float>(sample[i] * t.scale);
      break;
    case Transform::Normalize: {
      const int64_t channels = sample_shape.empty() ? 1 : sample_shape[0];
      const int64_t per_channel = channels == 0 ? 0 : n / channels;
      for (int64_t c = 0; c < channels; ++c) {
        const double m = t.mean.size() == 1 ? t.mean[0] : t.mean[static_cast<size_t>(c)];
        const double s = t.std.size() == 1 ? t.std[0] : t.std[static_cast<size_t>(c)];
        float* p = sample + c * per_channel;
        for (int64_t i = 0; i < per_channel; ++i) p[i] = static_cast<float>((p[i] - m) / s);
      }
      break;
    }
    case Transform::RandomFlip: {
      if (uniform01(rng()) >= t.p) break;
      const int64_t w = sample_shape.back();
      for (int64_t row = 0; w > 0 && row < n / w; ++row) std::reverse(sample + row * w, sample + (row + 1) * w);
      break;
    }
    case Transform::RandomCrop: {
      const int64_t h = sample_shape[sample_shape.size() - 2], w = sample_shape.back();
      // Offsets into the padded image: 0..2*padding; the crop is the original size.
      const auto dy = static_cast<int64_t>(uniform_below(rng(), static_cast<uint64_t>(2 * t.padding + 1))) - t.padding;
      const auto dx = static_cast<int64_t>(uniform_below(rng(), static_cast<uint64_t>(2 * t.padding + 1))) - t.padding;
      if (h * w == 0 || (dy == 0 && dx == 0)) break;
      std::vector<float> plane(static_cast<size_t>(h * w));
      for (int64_t base = 0; base < n; base += h * w) {
        float* p = sample + base;
        for (int64_t y = 0; y < h; ++y) {
          for (int64_t x = 0; x < w; ++x) {
            const int64_t sy = y + dy, sx = x + dx;
            plane[static_cast<size_t>(y * w + x)] = (sy >= 0 && sy < h && sx >= 0 && sx < w) ? p[sy * w + sx] : 0.0f;
          }
        }
        std::copy(plane.begin(), plane.end(), p);
      }
      break;
    }
  }
}

bool is_affine(const Transform& t) { return t.kind == Transform::Scale || t.kind == Transform::Normalize; }

}  // namespace

uint64_t transform_seed(uint64_t seed, int64_t epoch, int64_t sample, size_t transform) {
  return mix(mix(mix(seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(sample)), transform);
}

void apply_transform(const Transform& t, float* sample, const Shape& sample_shape, uint64_t rng_seed) {
  check_transform(t, sample_shape);
  apply_checked_transform(t, sample, sample_shape, rng_seed);
}

Dataset Dataset::first(int64_t n) const {
  if (n < 0 || n >= size()) return *this;
  const auto head = [n](const Tensor& t) {
    Shape shape = t.shape();
    shape[0] = n;
    return t.as_strided(shape, t.strides(), t.offset()).clone();
  };
  return {head(features), head(labels)};
}

DataLoader::DataLoader(Dataset data, LoaderOptions options, std::vector<Transform> transforms)
    : data_(std::move(data)), options_(options), transforms_(std::move(transforms)) {
  PD_CHECK(data_.features.defined() && data_.features.dim() >= 1, ErrorCode::kInvalidArgument,
           "DataLoader: features must be a tensor with a leading sample axis");
  PD_CHECK(data_.labels.defined() && data_.labels.dim() == 1 && data_.labels.shape()[0] == data_.size(),
           ErrorCode::kShape, "DataLoader: labels must have shape [{}], got {}", data_.size(),
           data_.labels.defined() ? shape_str(data_.labels.shape()) : "undefined");
  PD_CHECK(is_integral(data_.labels.dtype()), ErrorCode::kDType, "DataLoader: labels must be integers, got {}",
           dtype_name(data_.labels.dtype()));
  PD_CHECK(options_.batch_size > 0, ErrorCode::kInvalidArgument, "DataLoader: batch_size must be > 0, got {}",
           options_.batch_size);
  PD_CHECK(options_.prefetch >= 0, ErrorCode::kInvalidArgument, "DataLoader: prefetch must be >= 0, got {}",
           options_.prefetch);
  PD_CHECK(options_.shards >= 1 && options_.shard >= 0 && options_.shard < options_.shards, ErrorCode::kInvalidArgument,
           "DataLoader: shard {} is not one of {} shards", options_.shard, options_.shards);
  data_.features = data_.features.contiguous();  // make_batch copies whole rows
  data_.labels = data_.labels.contiguous();
  const Shape sample(data_.features.shape().begin() + 1, data_.features.shape().end());
  for (const Transform& t : transforms_) check_transform(t, sample);  // fail here, not in the worker
  // The leading scale/normalize transforms fold into one per-channel x * a + b, applied while the
  // samples are converted to f32: one pass over the batch instead of one per transform.
  const int64_t channels = sample.empty() ? 1 : sample[0];
  const bool empty = shape_numel(sample) == 0;
  std::vector<double> a(empty ? 1 : static_cast<size_t>(channels), 1.0), b(a.size(), 0.0);
  for (; !empty && affine_prefix_ < transforms_.size() && is_affine(transforms_[affine_prefix_]); ++affine_prefix_) {
    const Transform& t = transforms_[affine_prefix_];
    for (size_t c = 0; c < a.size(); ++c) {
      if (t.kind == Transform::Scale) {
        a[c] *= t.scale, b[c] *= t.scale;
      } else {
        const double m = t.mean.size() == 1 ? t.mean[0] : t.mean[c], sd = t.std.size() == 1 ? t.std[0] : t.std[c];
        a[c] /= sd, b[c] = (b[c] - m) / sd;
      }
    }
  }
  channel_scale_.assign(a.begin(), a.end());
  channel_shift_.assign(b.begin(), b.end());
}

DataLoader::~DataLoader() { stop_worker(); }

int64_t DataLoader::batches_per_epoch() const {
  const int64_t n = data_.size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void DataLoader::start_epoch(int64_t epoch, int64_t skip_batches) {
  PD_CHECK(skip_batches >= 0, ErrorCode::kInvalidArgument, "DataLoader::start_epoch: skip_batches must be >= 0");
  stop_worker();
  epoch_ = epoch;
  next_index_ = std::min(skip_batches, batches_per_epoch());
  const int64_t n = data_.size();
  order_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order_[static_cast<size_t>(i)] = i;
  if (options_.shuffle) {
    std::mt19937_64 rng(mix(options_.seed, static_cast<uint64_t>(epoch)));
    for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
      const auto j = static_cast<int64_t>(uniform_below(rng, static_cast<uint64_t>(i + 1)));
      std::swap(order_[static_cast<size_t>(i)], order_[static_cast<size_t>(j)]);
    }
  }
  if (options_.prefetch == 0) return;
  const int64_t first = next_index_, last = batches_per_epoch();
  worker_ = std::thread([this, first, last] {
    try {
      for (int64_t b = first; b < last; ++b) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return stop_ || static_cast<int64_t>(ready_.size()) < options_.prefetch; });
          if (stop_) return;
        }
        Batch batch = make_batch(b);  // outside the lock: the consumer keeps taking batches meanwhile
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(batch));
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    worker_done_ = true;
    cv_.notify_all();
  });
}

std::optional<Batch> DataLoader::next() {
  // next() before any start_epoch(): start epoch 0 (order_ is filled by every start_epoch).
  if (order_.size() != static_cast<size_t>(data_.size())) start_epoch(epoch_);
  if (next_index_ >= batches_per_epoch()) return std::nullopt;
  if (options_.prefetch == 0) return make_batch(next_index_++);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !ready_.empty() || error_ || worker_done_; });
  // Batches are produced in order, so an error comes after every batch built before it.
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);  // kept: every later next() of this epoch fails too
    raise(ErrorCode::kInternal, "DataLoader: prefetch worker stopped before batch {}", next_index_);
  }
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  ++next_index_;
  cv_.notify_all();
  return batch;
}

Batch DataLoader::make_batch(int64_t index) const {
  const int64_t n = data_.size();
  const int64_t global_begin = index * options_.batch_size;
  const int64_t global_count = std::min(n, global_begin + options_.batch_size) - global_begin;
  const int64_t part = global_count / options_.shards, extra = global_count % options_.shards;
  const int64_t begin = global_begin + options_.shard * part + std::min<int64_t>(options_.shard, extra);
  const int64_t count = part + (options_.shard < extra ? 1 : 0);
  Shape shape = data_.features.shape();
  const Shape sample_shape(shape.begin() + 1, shape.end());
  const int64_t row = shape_numel(sample_shape);
  shape[0] = count;

  Batch batch;
  batch.index = index;
  batch.global_size = global_count;
  batch.x = Tensor::empty(shape, DType::f32);
  batch.y = Tensor::empty({count}, DType::i64);
  float* x = batch.x.data<float>();
  int64_t* y = batch.y.data<int64_t>();
  const int64_t channels = static_cast<int64_t>(channel_scale_.size());
  const int64_t per_channel = row / channels;
  visit_dtype(data_.features.dtype(), [&]<typename T>() {
    const T* src = static_cast<const T*>(data_.features.raw_data());
    for (int64_t i = 0; i < count; ++i) {
      const int64_t s = order_[static_cast<size_t>(begin + i)];
      float* __restrict dst = x + i * row;
      const T* __restrict from = src + s * row;
      for (int64_t c = 0; c < channels; ++c) {
        const float a = channel_scale_[static_cast<size_t>(c)], b = channel_shift_[static_cast<size_t>(c)];
#pragma omp simd
        for (int64_t k = c * per_channel; k < (c + 1) * per_channel; ++k) dst[k] = convert<float>(from[k]) * a + b;
      }
      // Seeded by the sample's dataset index, so its augmentation does not depend on batch layout.
      for (size_t t = affine_prefix_; t < transforms_.size(); ++t)
        apply_checked_transform(transforms_[t], dst, sample_shape, transform_seed(options_.seed, epoch_, s, t));
    }
  });
  visit_dtype(data_.labels.dtype(), [&]<typename T>() {
    const T* src = static_cast<const T*>(data_.labels.raw_data());
    for (int64_t i = 0; i < count; ++i) y[i] = convert<int64_t>(src[order_[static_cast<size_t>(begin + i)]]);
  });
  return batch;
}

void DataLoader::stop_worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
  ready_.clear();
  error_ = nullptr;
  stop_ = false;
  worker_done_ = false;
}

}  // namespace pd::data
