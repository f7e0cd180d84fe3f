#include "onnx_tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>


namespace pd::io::onnx_util {
namespace {

using TP = onnx::TensorProto;

// The typed repeated field an element type uses when raw_data is absent (ONNX's TensorProto rules).
template <typename Dst, typename Field>
void copy_field(const Field& f, Tensor& t) {
  Dst* d = t.data<Dst>();
  for (int i = 0; i < f.size(); ++i) d[i] = static_cast<Dst>(f.Get(i));
}

// A non-negative decimal integer of an external_data entry.
int64_t external_int(const std::string& text, const char* key, const std::string& where) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  PD_CHECK(ec == std::errc() && end == text.data() + text.size() && v >= 0, ErrorCode::kParse,
           "{}: external data {} '{}' is not a non-negative integer", where, key, text);
  return v;
}

std::string external_bytes(const TP& t, const std::string& model_dir, const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = external_int(kv.value(), "offset", where);
    else if (kv.key() == "length") length = external_int(kv.value(), "length", where);
  }
  PD_CHECK(!location.empty(), ErrorCode::kParse, "{}: external data without a location", where);
  namespace fs = std::filesystem;
  // The ONNX rule: a location is relative to the model's directory and stays inside it, so that a
  // downloaded model cannot make us read other files.
  const fs::path rel(location);
  bool escapes = rel.is_absolute() || location.find('\0') != std::string::npos;
  for (const auto& part : rel) escapes = escapes || part == "..";
  PD_CHECK(!escapes, ErrorCode::kParse, "{}: external data location '{}' is not a path inside the model's directory",
           where, location);
  const fs::path file = fs::path(model_dir) / rel;
  PD_CHECK(fs::exists(file), ErrorCode::kIO, "{}: external data file '{}' is missing (looked for {})", where, location,
           file.string());
  // Only the tensor's bytes are read: torch's dynamo exporter puts every weight in one file.
  std::error_code ec;
  const auto size = static_cast<uint64_t>(fs::file_size(file, ec));
  PD_CHECK(!ec, ErrorCode::kIO, "{}: cannot read external data file '{}': {}", where, location, ec.message());
  const auto start = static_cast<uint64_t>(offset);
  PD_CHECK(start <= size, ErrorCode::kParse, "{}: external data offset {} is past the end of '{}' ({} bytes)", where,
           offset, location, size);
  const uint64_t n = length < 0 ? size - start : static_cast<uint64_t>(length);
  PD_CHECK(n <= size - start, ErrorCode::kParse, "{}: external data [{}, {}) is past the end of '{}' ({} bytes)", where,
           offset, start + n, location, size);
  std::ifstream in(file, std::ios::binary);
  std::string bytes(n, '\0');
  in.seekg(static_cast<std::streamoff>(start));
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  PD_CHECK(in && static_cast<uint64_t>(in.gcount()) == n, ErrorCode::kIO, "{}: reading {} bytes of '{}' at offset {} failed",
           where, n, location, offset);
  return bytes;
}

}  // namespace

DType dtype_of(int32_t onnx_type, const std::string& where) {
  switch (onnx_type) {
    case TP::FLOAT: return DType::f32;
    case TP::DOUBLE: return DType::f64;
    case TP::FLOAT16: return DType::f16;
    case TP::BFLOAT16: return DType::bf16;
    case TP::INT8: return DType::i8;
    case TP::UINT8: return DType::u8;
    case TP::INT32: return DType::i32;
    case TP::INT64: return DType::i64;
    case TP::BOOL: return DType::boolean;
    default: break;
  }
  const std::string name = TP::DataType_IsValid(onnx_type) ? TP::DataType_Name(static_cast<TP::DataType>(onnx_type))
                                                           : std::to_string(onnx_type);
  raise(ErrorCode::kNotImplemented, "{}: element type {} has no paddle-cpp dtype (supported: float, double, float16, "
        "bfloat16, int8, uint8, int32, int64, bool)", where, name);
}

int32_t onnx_type_of(DType t) {
  switch (t) {
    case DType::f32: return TP::FLOAT;
    case DType::f64: return TP::DOUBLE;
    case DType::f16: return TP::FLOAT16;
    case DType::bf16: return TP::BFLOAT16;
    case DType::i8: return TP::INT8;
    case DType::u8: return TP::UINT8;
    case DType::i32: return TP::INT32;
    case DType::i64: return TP::INT64;
    case DType::boolean: return TP::BOOL;
  }
  return TP::UNDEFINED;
}

Tensor to_tensor(const TP& t, const std::string& model_dir, const std::string& where) {
  const DType dtype = dtype_of(t.data_type(), where);
  // A corrupted file can claim any dims: the limits come before anything is allocated.
  const Shape shape(t.dims().begin(), t.dims().end());
  int64_t numel = 0;
  try {
    numel = checked_numel(shape, where);
  } catch (const Error& e) {
    raise(ErrorCode::kParse, "{}", e.what());
  }
  const size_t bytes = static_cast<size_t>(numel) * dtype_size(dtype);
  const bool external = t.data_location() == TP::EXTERNAL;
  if (external || t.has_raw_data()) {
    const std::string raw = external ? external_bytes(t, model_dir, where) : t.raw_data();
    PD_CHECK(raw.size() == bytes, ErrorCode::kParse, "{}: {} bytes of data for dims {} of {} ({} bytes expected)", where,
             raw.size(), shape_str(shape), dtype_name(dtype), bytes);
    Tensor out = Tensor::empty(shape, dtype);
    if (bytes) std::memcpy(out.raw_data(), raw.data(), bytes);
    return out;
  }
  // Typed fields: the value count must match before anything is allocated.
  const int64_t count = dtype == DType::f32 ? t.float_data_size() : dtype == DType::f64 ? t.double_data_size()
                        : dtype == DType::i64 ? t.int64_data_size() : t.int32_data_size();
  PD_CHECK(count == numel, ErrorCode::kParse, "{}: {} values for dims {} ({} expected)", where, count, shape_str(shape), numel);
  Tensor out = Tensor::empty(shape, dtype);
  switch (dtype) {
    case DType::f32: copy_field<float>(t.float_data(), out); break;
    case DType::f64: copy_field<double>(t.double_data(), out); break;
    case DType::i64: copy_field<int64_t>(t.int64_data(), out); break;
    case DType::i32: copy_field<int32_t>(t.int32_data(), out); break;
    case DType::i8: copy_field<int8_t>(t.int32_data(), out); break;
    case DType::u8: copy_field<uint8_t>(t.int32_data(), out); break;
    case DType::boolean: copy_field<bool>(t.int32_data(), out); break;
    case DType::f16:
    case DType::bf16: {  // the 16-bit patterns sit in int32_data
      auto* d = static_cast<uint16_t*>(out.raw_data());
      for (int i = 0; i < t.int32_data_size(); ++i) d[i] = static_cast<uint16_t>(t.int32_data(i));
      break;
    }
  }
  return out;
}

void from_tensor(const Tensor& t, const std::string& name, TP* out) {
  const Tensor c = t.contiguous();
  out->set_name(name);
  out->set_data_type(onnx_type_of(c.dtype()));
  for (int64_t d : c.shape()) out->add_dims(d);
  out->set_raw_data(std::string(static_cast<const char*>(c.raw_data()), c.numel() * dtype_size(c.dtype())));
}

}  // namespace pd::io::onnx_util
