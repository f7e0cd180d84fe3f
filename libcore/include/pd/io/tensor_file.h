// The project's tensor-archive format, used for model parameters and checkpoints. Written atomically
// (temp file, fsync, rename); every tensor carries a checksum, and the file a trailer checksum and
// format version. A truncated, corrupted or newer-version file is refused with a message.
//
//   pd::io::save_tensors("model.pdparams", {{"fc1.weight", w}, {"fc1.bias", b}}, {{"arch", "lenet"}});
//   auto archive = pd::io::load_tensors("model.pdparams");
#pragma once
#include <map>
#include <string>

#include "pd/core/tensor.h"

namespace pd::io {

inline constexpr uint32_t kTensorFileVersion = 1;

struct TensorArchive {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // free-form text (config, hashes, versions)
};

void save_tensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                  const std::map<std::string, std::string>& metadata = {});
TensorArchive load_tensors(const std::string& path);
// The bytes save_tensors writes (`path` only names the file in error messages), for callers that write
// the archive together with another file (save_program).
std::string encode_tensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                           const std::map<std::string, std::string>& metadata = {});
// load_tensors on bytes already read; `path` names them in messages.
TensorArchive parse_tensors(const std::string& bytes, const std::string& path);

// The whole file (pd::Error kIO naming the path when it cannot be read).
std::string read_file_bytes(const std::string& path);
// Atomically replaces `path` with `bytes` (temp file in the same directory, fsync, rename).
void write_file_atomic(const std::string& path, const std::string& bytes);
// 64-bit FNV-1a, the checksum used by the formats of this project.
uint64_t fnv1a64(const void* data, size_t n, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace pd::io
