// Readers for the dataset formats pd-train accepts. Every reader verifies what it reads and throws
// pd::Error naming the file and what was wrong (truncated, bad magic, wrong dtype...), never a
// half-filled tensor.
//
//   pd::Tensor images = pd::data::read_idx("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
//   // u8 [60000, 28, 28]
#pragma once
#include <string>

#include "pd/core/tensor.h"

namespace pd::data {

// IDX (MNIST) files, gzipped (by magic bytes, not name) or not. Returns the stored dtype
// (u8, i8, i32, f32, f64; i16 is widened to i32) and shape. With max_records >= 0, only the first
// max_records records (along the first dimension) are inflated and read: `pd-train --limit` on a
// 60000-image file holds the images it uses, not all of them. `records` (if given) gets the file's
// own count, so that a features file and its labels can still be checked against each other.
Tensor read_idx(const std::string& path, int64_t max_records = -1, int64_t* records = nullptr);
// The same on the file's bytes (gzipped or not); `path` names them in messages. Gzip data may inflate
// to the size the IDX header declares, not more.
Tensor parse_idx(const std::string& bytes, const std::string& path, int64_t max_records = -1, int64_t* records = nullptr);

// NumPy .npy (format 1.0-3.0), little-endian, C order; dtypes f4 f8 i1 u1 i4 i8 b1.
Tensor read_npy(const std::string& path);
Tensor parse_npy(const std::string& bytes, const std::string& path);
// Writes a .npy file atomically (used by pd-infer outputs and tests).
void write_npy(const std::string& path, const Tensor& t);

struct CsvTable {
  Tensor features;  // f32 [rows, columns - 1]
  Tensor labels;    // i64 [rows]
};
// Numeric CSV: one row per sample; `label_column` (negative counts from the end) holds integer labels;
// `header` skips the first line. NaN/Inf feature values are refused unless `allow_non_finite`. Errors
// name the file, line and column.
CsvTable read_csv(const std::string& path, int64_t label_column = -1, bool header = false, bool allow_non_finite = false);
CsvTable parse_csv(const std::string& text, const std::string& path, int64_t label_column = -1, bool header = false,
                   bool allow_non_finite = false);

}  // namespace pd::data
