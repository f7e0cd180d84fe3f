// IDX (the MNIST container): 2 zero bytes, a type byte, a dimension count, big-endian u32 extents,
// then big-endian data. Files are often gzipped; we detect that by the gzip magic, not the name.
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "pd/data/readers.h"

namespace pd::data {
namespace {

// Whole file contents, inflated when it starts with the gzip magic 1f 8b.
std::string read_maybe_gzipped(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PD_CHECK(in.good(), ErrorCode::kIO, "{}: cannot open file: {}", path, std::strerror(errno));
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  PD_CHECK(!in.bad(), ErrorCode::kIO, "{}: read error", path);
  if (raw.size() < 2 || static_cast<unsigned char>(raw[0]) != 0x1f || static_cast<unsigned char>(raw[1]) != 0x8b) {
    return raw;
  }
  raw.clear();
  raw.shrink_to_fit();
  gzFile gz = gzopen(path.c_str(), "rb");
  PD_CHECK(gz != nullptr, ErrorCode::kIO, "{}: cannot open gzip stream", path);
  std::string out;
  char buf[1 << 16];
  while (true) {
    const int n = gzread(gz, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(gz, &err);
      gzclose(gz);
      raise(ErrorCode::kParse, "{}: corrupt or truncated gzip data: {}", path, msg);
    }
    break;
  }
  // zlib reports a stream cut short as a 0-byte read with Z_BUF_ERROR left behind, not as -1.
  int err = 0;
  const char* msg = gzerror(gz, &err);
  if (err != Z_OK) {
    std::string text = msg;
    gzclose(gz);
    raise(ErrorCode::kParse, "{}: corrupt or truncated gzip data: {}", path, text);
  }
  const int close_rc = gzclose(gz);
  PD_CHECK(close_rc == Z_OK, ErrorCode::kParse, "{}: corrupt or truncated gzip data (gzclose returned {})", path,
           close_rc);
  return out;
}

uint32_t read_be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Copies `count` big-endian elements of `size` bytes into native order.
void copy_from_big_endian(const unsigned char* src, unsigned char* dst, int64_t count, size_t size) {
  const size_t bytes = static_cast<size_t>(count) * size;
  std::memcpy(dst, src, bytes);
  if constexpr (std::endian::native == std::endian::little) {
    if (size == 1) return;
    for (size_t i = 0; i < bytes; i += size) std::reverse(dst + i, dst + i + size);
  }
}

}  // namespace

Tensor read_idx(const std::string& path) {
  const std::string bytes = read_maybe_gzipped(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  PD_CHECK(bytes.size() >= 4, ErrorCode::kParse, "{}: too short for an IDX header ({} bytes)", path, bytes.size());
  PD_CHECK(p[0] == 0 && p[1] == 0, ErrorCode::kParse,
           "{}: bad IDX magic: expected 00 00 <type> <ndim>, found {:02x} {:02x} {:02x} {:02x}", path, p[0], p[1],
           p[2], p[3]);
  DType dtype;
  size_t elem = 0;  // element size on disk
  switch (p[2]) {
    case 0x08: dtype = DType::u8; elem = 1; break;
    case 0x09: dtype = DType::i8; elem = 1; break;
    case 0x0B: dtype = DType::i32; elem = 2; break;  // i16 is widened: pd has no i16 dtype
    case 0x0C: dtype = DType::i32; elem = 4; break;
    case 0x0D: dtype = DType::f32; elem = 4; break;
    case 0x0E: dtype = DType::f64; elem = 8; break;
    default:
      raise(ErrorCode::kParse, "{}: bad IDX magic: unknown type byte 0x{:02x} (expected 08 09 0b 0c 0d 0e)", path,
            p[2]);
  }
  const int ndim = p[3];
  PD_CHECK(ndim >= 1, ErrorCode::kParse, "{}: IDX header has 0 dimensions", path);
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  PD_CHECK(bytes.size() >= header, ErrorCode::kParse, "{}: truncated IDX header: expected {} bytes, found {}", path,
           header, bytes.size());
  Shape shape(static_cast<size_t>(ndim));
  for (int i = 0; i < ndim; ++i) shape[static_cast<size_t>(i)] = read_be32(p + 4 + 4 * i);

  int64_t numel = 0;
  try {
    numel = shape_numel(shape);
  } catch (const Error&) {
    raise(ErrorCode::kParse, "{}: IDX shape {} is too large", path, shape_str(shape));
  }
  const uint64_t want = static_cast<uint64_t>(numel) * elem;  // numel < 2^63 and elem <= 8: fits in u64
  const uint64_t have = bytes.size() - header;
  PD_CHECK(have >= want, ErrorCode::kParse, "{}: expected {} bytes of data for shape {}, found {}", path, want,
           shape_str(shape), have);
  PD_CHECK(have == want, ErrorCode::kParse, "{}: {} bytes of trailing garbage after the data for shape {}", path,
           have - want, shape_str(shape));

  Tensor t = Tensor::empty(shape, dtype);
  const unsigned char* data = p + header;
  if (p[2] == 0x0B) {
    int32_t* out = t.data<int32_t>();
    for (int64_t i = 0; i < numel; ++i) {
      out[i] = static_cast<int16_t>(static_cast<uint16_t>((data[2 * i] << 8) | data[2 * i + 1]));
    }
  } else if (numel > 0) {
    copy_from_big_endian(data, static_cast<unsigned char*>(t.raw_data()), numel, elem);
  }
  return t;
}

}  // namespace pd::data
