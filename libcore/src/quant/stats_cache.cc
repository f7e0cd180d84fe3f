// Each observer is stored as two tensors, NAME#histogram (i64) and NAME#summary (f64: limit, min, max,
// count, non-finite count); the key and a format tag go in the archive's metadata.
#include "pd/quant/stats_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pd/core/cpu_features.h"
#include "pd/core/error.h"
#include "pd/core/threads.h"
#include "pd/io/tensor_file.h"

namespace pd::quant {
namespace {

// v2: the residual operands of adds are observed too.
constexpr const char* kFormat = "pd-quant calibration statistics v2";
constexpr const char* kHistogram = "#histogram";
constexpr const char* kSummary = "#summary";

uint64_t hash_text(const std::string& s, uint64_t h) { return io::fnv1a64(s.data(), s.size(), h); }

}  // namespace

std::string stats_key(const std::vector<std::string>& files, const std::vector<std::map<std::string, Tensor>>& batches) {
  uint64_t h = hash_text(kFormat, io::fnv1a64(nullptr, 0));
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    PD_CHECK(in.good(), ErrorCode::kIO, "cannot read '{}' to key the calibration statistics", f);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    h = hash_text(bytes.str(), h);
  }
  for (const auto& batch : batches)
    for (const auto& [name, t] : batch) {
      const Tensor c = t.contiguous();
      h = hash_text(fmt::format("{}:{}:{}", name, dtype_name(c.dtype()), fmt::join(c.shape(), "x")), h);
      h = io::fnv1a64(c.raw_data(), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()), h);
    }
  // The f32 values observed depend on how kernels split and vectorise their sums.
  h = hash_text(fmt::format("threads={} avx2={} avx512={} vnni={}", num_threads(), cpu_has_avx2_fma(), cpu_has_avx512(),
                            cpu_has_vnni()),
                h);
  return fmt::format("{:016x}", h);
}

void save_stats(const std::string& path, const std::map<std::string, Observer>& observers, const std::string& key) {
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, obs] : observers) {
    const Observer::State s = obs.state();
    tensors[name + kHistogram] = Tensor::from_vector<int64_t>(s.histogram, {static_cast<int64_t>(s.histogram.size())});
    tensors[name + kSummary] = Tensor::from_vector<double>(
        {s.limit, s.min, s.max, static_cast<double>(s.count), static_cast<double>(s.non_finite)}, {5});
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  io::save_tensors(path, tensors, {{"format", kFormat}, {"key", key}});
}

std::optional<std::map<std::string, Observer>> load_stats(const std::string& path, const std::string& key, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<std::map<std::string, Observer>> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return fail("no statistics stored for this model and data");
  io::TensorArchive a;
  try {
    a = io::load_tensors(path);
  } catch (const Error& e) {
    return fail(e.what());
  }
  if (a.metadata["format"] != kFormat || a.metadata["key"] != key)
    return fail(fmt::format("'{}' was written for other statistics (format '{}', key '{}')", path, a.metadata["format"],
                            a.metadata["key"]));
  std::map<std::string, Observer> out;
  try {
    for (const auto& [tname, t] : a.tensors) {
      const std::string suffix = kHistogram;
      if (tname.size() <= suffix.size() || tname.compare(tname.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
      const std::string name = tname.substr(0, tname.size() - suffix.size());
      auto summary = a.tensors.find(name + kSummary);
      PD_CHECK(summary != a.tensors.end() && summary->second.dtype() == DType::f64 && summary->second.numel() == 5 &&
                   t.dtype() == DType::i64,
               ErrorCode::kParse, "'{}' has no well-formed summary", name);
      const std::vector<double> s = summary->second.to_vector<double>();
      out.emplace(name, Observer::restore({t.to_vector<int64_t>(), s[0], s[1], s[2], static_cast<int64_t>(s[3]),
                                           static_cast<int64_t>(s[4])}));
    }
  } catch (const Error& e) {
    return fail(fmt::format("'{}': {}", path, e.what()));
  }
  if (out.size() * 2 != a.tensors.size()) return fail(fmt::format("'{}' holds tensors that are not statistics", path));
  return out;
}

}  // namespace pd::quant
