// The calibration statistics cache: running the f32 model over the calibration set is most of
// pd-quant's time, and the observers it fills do not depend on the method that turns them into ranges.
// So they are stored under a key that hashes everything they do depend on (the model's bytes, the
// calibration batches as fed, the thread count and the CPU paths), and trying another method reads them
// back. Files are tensor archives (atomic, checksummed); a damaged or stale one is ignored, never used.
//
//   const std::string key = pd::quant::stats_key({"m.pdmodel", "m.pdiparams"}, feeds);
//   auto cached = pd::quant::load_stats(dir + "/" + key + ".pdstats", key, &why);
//   if (!cached) pd::quant::save_stats(path, pd::quant::calibrate(p, feeds), key);
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/quant/calibration.h"

namespace pd::quant {

// 16 hex digits over the files' bytes, every batch tensor (names, shapes, dtypes, values), the kernel
// thread count and the CPU paths the kernels take. Throws pd::Error when a file cannot be read.
std::string stats_key(const std::vector<std::string>& files, const std::vector<std::map<std::string, Tensor>>& batches);

void save_stats(const std::string& path, const std::map<std::string, Observer>& observers, const std::string& key);

// The observers stored at `path` under `key`; nullopt, with the reason in `why`, when there is no such
// file or it is unreadable, damaged or written for another key.
std::optional<std::map<std::string, Observer>> load_stats(const std::string& path, const std::string& key, std::string* why);

}  // namespace pd::quant
