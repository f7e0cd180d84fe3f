// NumPy .npy: "\x93NUMPY", major, minor, header length (u16 for 1.0, u32 for 2.0/3.0), a Python dict
// literal {'descr': ..., 'fortran_order': ..., 'shape': (...)} padded to 64 bytes, then raw data.
#include <bit>
#include <cerrno>
#include <cstring>

#include "pd/data/readers.h"
#include "pd/io/tensor_file.h"

namespace pd::data {
namespace {

// Data is copied as-is: .npy here is little-endian, like the hosts we build for.
static_assert(std::endian::native == std::endian::little);

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct NpyType {
  const char* code;  // descr without the byte-order character
  DType dtype;
};
constexpr NpyType kTypes[] = {{"f4", DType::f32}, {"f8", DType::f64}, {"i1", DType::i8}, {"u1", DType::u8},
                              {"i4", DType::i32}, {"i8", DType::i64}, {"b1", DType::boolean}};

// Parser for the header dict. It only needs the literal forms numpy writes: quoted strings,
// True/False and tuples of integers; anything else is a format error.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  void parse(std::string& descr, bool& fortran, Shape& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') { ++i_; break; }
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        fail(fmt::format("unknown key '{}'", key));
      }
      skip_space();
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      break;
    }
    if (!have_descr || !have_fortran || !have_shape) fail("missing 'descr', 'fortran_order' or 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    raise(ErrorCode::kParse, "{}: bad .npy header at offset {}: {} (header: {})", path_, i_, what, s_);
  }
  void skip_space() { while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_; }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    if (s_.compare(i_, 4, "True") == 0) { i_ += 4; return true; }
    if (s_.compare(i_, 5, "False") == 0) { i_ += 5; return false; }
    fail("expected True or False");
  }
  Shape tuple() {
    expect('(');
    Shape out;
    while (true) {
      skip_space();
      if (peek() == ')') { ++i_; return out; }
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer extent");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v)) fail("extent overflows");
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      out.push_back(v);
      skip_space();
      if (peek() == ',') { ++i_; continue; }
      if (peek() != ')') fail("expected ',' or ')' in shape");
    }
  }

  const std::string& path_;
  const std::string& s_;
  size_t i_ = 0;
};

uint32_t read_le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Tensor read_npy(const std::string& path) { return parse_npy(io::read_file_bytes(path), path); }

Tensor parse_npy(const std::string& bytes, const std::string& path) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());

  PD_CHECK(bytes.size() >= 10 && bytes.compare(0, kMagicLen, kMagic) == 0, ErrorCode::kParse,
           "{}: not a .npy file (bad magic; expected \\x93NUMPY)", path);
  const int major = p[6], minor = p[7];
  PD_CHECK(major >= 1 && major <= 3 && minor == 0, ErrorCode::kParse,
           "{}: unsupported .npy format version {}.{} (expected 1.0, 2.0 or 3.0)", path, major, minor);
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagicLen + 2 + len_bytes;
  PD_CHECK(bytes.size() >= prefix, ErrorCode::kParse, "{}: truncated .npy header", path);
  const size_t header_len = read_le(p + 8, static_cast<int>(len_bytes));
  PD_CHECK(bytes.size() >= prefix + header_len, ErrorCode::kParse,
           "{}: truncated .npy header: expected {} bytes, found {}", path, header_len, bytes.size() - prefix);

  std::string descr;
  bool fortran = false;
  Shape shape;
  const std::string header = bytes.substr(prefix, header_len);
  HeaderParser(path, header).parse(descr, fortran, shape);
  PD_CHECK(!fortran, ErrorCode::kParse, "{}: fortran_order=True arrays are not supported (save with C order)", path);

  PD_CHECK(descr.size() == 3, ErrorCode::kDType, "{}: unsupported .npy dtype '{}'", path, descr);
  PD_CHECK(descr[0] != '>', ErrorCode::kDType, "{}: big-endian .npy dtype '{}' is not supported", path, descr);
  const std::string code = descr.substr(1);
  const NpyType* type = nullptr;
  for (const auto& t : kTypes) {
    if (code == t.code) type = &t;
  }
  // '|' (not applicable) is only meaningful for 1-byte types; multi-byte types must say '<' or '='.
  const bool one_byte = type && dtype_size(type->dtype) == 1;
  PD_CHECK(type && (descr[0] == '<' || descr[0] == '=' || (descr[0] == '|' && one_byte)), ErrorCode::kDType,
           "{}: unsupported .npy dtype '{}' (supported: <f4 <f8 |i1 |u1 <i4 <i8 |b1)", path, descr);

  int64_t numel = 0;
  try {
    numel = checked_numel(shape, path);
  } catch (const Error& e) {
    raise(ErrorCode::kParse, "{} (.npy header)", e.what());
  }
  // Checked against the bytes present before anything is allocated; numel <= 2^40 keeps this exact.
  const uint64_t want = static_cast<uint64_t>(numel) * dtype_size(type->dtype);
  const uint64_t have = bytes.size() - prefix - header_len;
  PD_CHECK(have == want, ErrorCode::kParse, "{}: expected {} bytes of data for shape {} {}, found {}", path, want,
           descr, shape_str(shape), have);

  Tensor t = Tensor::empty(shape, type->dtype);
  const unsigned char* data = p + prefix + header_len;
  if (type->dtype == DType::boolean) {
    bool* out = t.data<bool>();  // any non-zero byte is true; a bool must not hold other bit patterns
    for (int64_t i = 0; i < numel; ++i) out[i] = data[i] != 0;
  } else if (numel > 0) {
    std::memcpy(t.raw_data(), data, static_cast<size_t>(want));
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  PD_CHECK(t.defined(), ErrorCode::kInvalidArgument, "write_npy({}): tensor is undefined", path);
  const char* descr = nullptr;
  switch (t.dtype()) {
    case DType::f32: descr = "<f4"; break;
    case DType::f64: descr = "<f8"; break;
    case DType::i8: descr = "|i1"; break;
    case DType::u8: descr = "|u1"; break;
    case DType::i32: descr = "<i4"; break;
    case DType::i64: descr = "<i8"; break;
    case DType::boolean: descr = "|b1"; break;
    default:
      raise(ErrorCode::kDType, "write_npy({}): dtype {} has no .npy equivalent here (convert to f32 first)", path,
            dtype_name(t.dtype()));
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += fmt::format("{}, ", t.shape()[i]);
  if (t.shape().size() == 1) shape.resize(shape.size() - 1);        // "(5,)"
  else if (t.shape().size() > 1) shape.resize(shape.size() - 2);    // "(2, 3)"
  shape += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);

  // numpy pads so the data starts on a 64-byte boundary; the header ends with '\n'.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  const Tensor c = t.contiguous();
  const size_t data_bytes = static_cast<size_t>(c.numel()) * dtype_size(c.dtype());
  std::string out;
  out.reserve(total + data_bytes);
  out.append(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += dict;
  if (data_bytes > 0) out.append(static_cast<const char*>(c.raw_data()), data_bytes);
  io::write_file_atomic(path, out);
}

}  // namespace pd::data
