// IDX (the MNIST container): 2 zero bytes, a type byte, a dimension count, big-endian u32 extents,
// then big-endian data. Files are often gzipped; we detect that by the gzip magic, not the name.
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include "pd/data/readers.h"
#include "pd/io/tensor_file.h"

namespace pd::data {
namespace {

bool is_gzip(const std::string& raw) {
  return raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f && static_cast<unsigned char>(raw[1]) == 0x8b;
}

// Inflates gzip data (one or more members) in memory. Stops with `*capped` set once the output passes
// `cap` bytes instead of inflating on, so that a small file cannot expand into all of memory.
std::string inflate_capped(const std::string& raw, size_t cap, const std::string& path, bool* capped) {
  z_stream zs{};
  PD_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, ErrorCode::kInternal, "{}: zlib inflateInit2 failed", path);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());  // the caller checked that it fits
  std::string out;
  char buf[1 << 16];
  *capped = false;
  int rc = Z_OK;
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (out.size() > cap) {
      *capped = true;
      break;
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // the next member of a concatenated gzip file
      continue;
    }
    if (rc != Z_OK) break;
    if (zs.avail_in == 0 && zs.avail_out != 0) {  // all input used, no end of stream: cut short
      rc = Z_BUF_ERROR;
      break;
    }
  }
  const std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  if (!*capped && rc != Z_STREAM_END) {
    raise(ErrorCode::kParse, "{}: corrupt or truncated gzip data{}{}", path, msg.empty() ? "" : ": ", msg);
  }
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

struct IdxHeader {
  unsigned char type = 0;  // the type byte
  DType dtype = DType::u8;
  size_t elem = 0;         // element size on disk
  Shape shape;
  int64_t numel = 0;
  size_t header = 0;       // bytes before the data
  uint64_t data_bytes = 0;
  int64_t records = 0;     // the file's extent along the first dimension
};

// Reads and checks the header at the start of `bytes` (which must hold at least all of the header).
IdxHeader parse_header(const std::string& bytes, const std::string& path) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  PD_CHECK(bytes.size() >= 4, ErrorCode::kParse, "{}: too short for an IDX header ({} bytes)", path, bytes.size());
  PD_CHECK(p[0] == 0 && p[1] == 0, ErrorCode::kParse,
           "{}: bad IDX magic: expected 00 00 <type> <ndim>, found {:02x} {:02x} {:02x} {:02x}", path, p[0], p[1],
           p[2], p[3]);
  IdxHeader h;
  h.type = p[2];
  switch (p[2]) {
    case 0x08: h.dtype = DType::u8; h.elem = 1; break;
    case 0x09: h.dtype = DType::i8; h.elem = 1; break;
    case 0x0B: h.dtype = DType::i32; h.elem = 2; break;  // i16 is widened: pd has no i16 dtype
    case 0x0C: h.dtype = DType::i32; h.elem = 4; break;
    case 0x0D: h.dtype = DType::f32; h.elem = 4; break;
    case 0x0E: h.dtype = DType::f64; h.elem = 8; break;
    default:
      raise(ErrorCode::kParse, "{}: bad IDX magic: unknown type byte 0x{:02x} (expected 08 09 0b 0c 0d 0e)", path,
            p[2]);
  }
  const int ndim = p[3];
  PD_CHECK(ndim >= 1, ErrorCode::kParse, "{}: IDX header has 0 dimensions", path);
  h.header = 4 + 4 * static_cast<size_t>(ndim);
  PD_CHECK(bytes.size() >= h.header, ErrorCode::kParse, "{}: truncated IDX header: expected {} bytes, found {}", path,
           h.header, bytes.size());
  h.shape.resize(static_cast<size_t>(ndim));
  for (int i = 0; i < ndim; ++i) h.shape[static_cast<size_t>(i)] = read_be32(p + 4 + 4 * i);
  try {
    h.numel = checked_numel(h.shape, path);
  } catch (const Error& e) {
    raise(ErrorCode::kParse, "{} (IDX header)", e.what());
  }
  h.data_bytes = static_cast<uint64_t>(h.numel) * h.elem;  // numel <= kMaxNumel = 2^40, elem <= 8
  h.records = h.shape[0];
  return h;
}

// The header of the first max_records records only (all of them where max_records < 0 or is more).
IdxHeader keep_records(IdxHeader h, int64_t max_records) {
  if (max_records < 0 || max_records >= h.records) return h;
  const int64_t per_record = h.numel / h.records;  // records > max_records >= 0
  h.shape[0] = max_records;
  h.numel = per_record * max_records;
  h.data_bytes = static_cast<uint64_t>(h.numel) * h.elem;
  return h;
}

}  // namespace

Tensor read_idx(const std::string& path, int64_t max_records, int64_t* records) {
  return parse_idx(io::read_file_bytes(path), path, max_records, records);
}

Tensor parse_idx(const std::string& raw, const std::string& path, int64_t max_records, int64_t* records) {
  std::string inflated;
  IdxHeader h;
  if (is_gzip(raw)) {
    PD_CHECK(raw.size() <= std::numeric_limits<uInt>::max(), ErrorCode::kParse,
             "{}: {} bytes of gzip data is more than this reader inflates (4 GiB)", path, raw.size());
    // The header first (at most 4 + 4 * 255 bytes), then the data it declares and not a byte more: a
    // small file must not inflate into all of memory.
    bool capped = false;
    h = keep_records(parse_header(inflate_capped(raw, 4 + 4 * 255, path, &capped), path), max_records);
    const uint64_t declared = h.header + h.data_bytes;
    inflated = inflate_capped(raw, static_cast<size_t>(declared), path, &capped);
    PD_CHECK(!capped || h.shape[0] < h.records, ErrorCode::kParse,
             "{}: the gzip data inflates to more than the {} bytes its IDX header declares for shape {}", path,
             declared, shape_str(h.shape));
  }
  const std::string& bytes = is_gzip(raw) ? inflated : raw;
  h = keep_records(parse_header(bytes, path), max_records);
  const uint64_t have = bytes.size() - h.header;
  PD_CHECK(have >= h.data_bytes, ErrorCode::kParse, "{}: expected {} bytes of data for shape {}, found {}", path,
           h.data_bytes, shape_str(h.shape), have);
  // Past the records kept, the rest of the file is not read (and, gzipped, not inflated).
  PD_CHECK(have == h.data_bytes || h.shape[0] < h.records, ErrorCode::kParse,
           "{}: {} bytes of trailing garbage after the data for shape {}", path, have - h.data_bytes, shape_str(h.shape));
  if (records) *records = h.records;

  Tensor t = Tensor::empty(h.shape, h.dtype);
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data()) + h.header;
  if (h.type == 0x0B) {
    int32_t* out = t.data<int32_t>();
    for (int64_t i = 0; i < h.numel; ++i) {
      out[i] = static_cast<int16_t>(static_cast<uint16_t>((data[2 * i] << 8) | data[2 * i + 1]));
    }
  } else if (h.numel > 0) {
    copy_from_big_endian(data, static_cast<unsigned char*>(t.raw_data()), h.numel, h.elem);
  }
  return t;
}

}  // namespace pd::data
