// The .pdiparams file PaddlePaddle's save_combine writes next to an inference program: the program's
// persistable tensors back to back in name order, each as
//   u32 version (0) | u64 LoD levels, each u64 byte count + offsets | u32 version (0) |
//   i32 n | n bytes of a VarType.TensorDesc protobuf (dtype, dims) | the raw little-endian values.
// Every count is checked against the bytes left before anything is allocated, and every tensor against
// the dtype and shape the program declares for it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "paddle_graph.h"
#include "paddle_program.pb.h"
#include "pd/io/tensor_file.h"

namespace pd::io::paddle_import {
namespace {

class ByteReader {
 public:
  ByteReader(const std::string& bytes, const std::string& path) : b_(bytes), path_(path) {}
  size_t offset() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }
  template <typename T>
  T read(const std::string& what) {
    T v;
    need(sizeof(T), what);
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const char* take(size_t n, const std::string& what) {
    need(n, what);
    const char* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }

 private:
  void need(size_t n, const std::string& what) const {
    PD_CHECK(n <= left(), ErrorCode::kParse, "{}: truncated: {} needs {} bytes at offset {}, {} left", path_, what, n, pos_,
             left());
  }
  const std::string& b_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

std::map<std::string, Tensor> read_params(const std::string& path, const PaddleGraph& graph) {
  const std::string bytes = read_file_bytes(path);
  ByteReader r(bytes, path);
  std::map<std::string, Tensor> out;
  for (size_t k = 0; k < graph.params.size(); ++k) {
    const std::string& name = graph.params[k];
    const std::string what = fmt::format("parameter {} of {} ('{}')", k + 1, graph.params.size(), name);
    PD_CHECK(r.left() > 0, ErrorCode::kParse, "{}: the program has {} parameters but the file ends after {}: it does not "
             "belong to this program", path, graph.params.size(), k);
    const auto version = r.read<uint32_t>(what);
    PD_CHECK(version == 0, ErrorCode::kParse, "{}: {} at offset {}: version {} (expected 0): not a save_combine file, or "
             "not this program's", path, what, r.offset() - 4, version);
    const auto levels = r.read<uint64_t>(what + " LoD");
    PD_CHECK(levels <= 16, ErrorCode::kParse, "{}: {} declares {} LoD levels", path, what, levels);
    for (uint64_t l = 0; l < levels; ++l) r.take(r.read<uint64_t>(what + " LoD"), what + " LoD offsets");
    PD_CHECK(r.read<uint32_t>(what) == 0, ErrorCode::kParse, "{}: {}: tensor version is not 0", path, what);
    const auto desc_size = r.read<int32_t>(what);
    PD_CHECK(desc_size >= 0, ErrorCode::kParse, "{}: {}: negative descriptor size", path, what);
    paddle_proto::VarType::TensorDesc desc;
    const char* d = r.take(static_cast<size_t>(desc_size), what + " descriptor");
    PD_CHECK(desc.ParseFromArray(d, desc_size), ErrorCode::kParse, "{}: {}: the tensor descriptor does not parse", path, what);
    const DType dtype = dtype_of_var_type(desc.data_type(), path + ": " + what);
    const Shape shape(desc.dims().begin(), desc.dims().end());
    try {
      check_shape_limits(shape, fmt::format("{}: {}", path, what));
    } catch (const Error& e) {
      raise(ErrorCode::kParse, "{}", e.what());
    }
    const auto var = graph.vars.find(name);
    PD_CHECK(var != graph.vars.end(), ErrorCode::kParse, "{}: {} is not a variable of the program", path, what);
    const PaddleVar& declared = var->second;
    PD_CHECK(dtype == declared.dtype && shape == declared.shape, ErrorCode::kParse,
             "{}: {} is {}{} in the file but {}{} in the program: the params file does not belong to this program",
             path, what, dtype_name(dtype), shape, dtype_name(declared.dtype), declared.shape);
    uint64_t bytes_needed = dtype_size(dtype);
    for (int64_t e : shape) {
      PD_CHECK(e >= 0 && static_cast<uint64_t>(e) <= r.left(), ErrorCode::kParse, "{}: {}: extent {} does not fit the "
               "{} bytes left", path, what, e, r.left());
      bytes_needed *= static_cast<uint64_t>(e);
      PD_CHECK(bytes_needed <= r.left(), ErrorCode::kParse, "{}: truncated: {} needs more than the {} bytes left", path,
               what, r.left());
    }
    const char* data = r.take(bytes_needed, what + " values");
    Tensor t = Tensor::empty(shape, dtype);
    if (bytes_needed) std::memcpy(t.raw_data(), data, bytes_needed);
    out[name] = t;
  }
  PD_CHECK(r.left() == 0, ErrorCode::kParse, "{}: {} bytes follow the program's {} parameters: the params file does not "
           "belong to this program", path, r.left(), graph.params.size());
  return out;
}

}  // namespace pd::io::paddle_import
