// Allocation limits (docs/testing.md): no reader allocates from a size field it has not checked against
// the limits on rank, extent and element count and against the bytes really there.
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>

#include "pd/data/readers.h"
#include "pd/io/model_file.h"
#include "pd/io/tensor_file.h"
#include "pd/pd.h"
#include "test_util.h"

using pd::Shape;
using pd::test::error_of;

namespace {

// A .npy file (format 1.0) with this header dict and data.
std::string npy(const std::string& dict, const std::string& data = "") {
  std::string header = dict + "\n";
  const uint16_t len = static_cast<uint16_t>(header.size());
  std::string out = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(len & 0xff) + static_cast<char>(len >> 8);
  return out + header + data;
}

std::string idx_header(unsigned char type, const std::vector<uint32_t>& dims) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((d >> shift) & 0xff);
  return out;
}

std::string gzip(const std::string& raw) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, raw.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// A tensor archive holding one f32 tensor of `shape` with no data bytes (trailer checksum right).
std::string archive_with_shape(const Shape& shape) {
  std::string out("PDTENSOR", 8);
  put<uint32_t>(out, 1);
  put<uint32_t>(out, 0);
  put<uint32_t>(out, 1);
  put<uint32_t>(out, 1);
  out += "t";
  put<uint8_t>(out, 0);
  put<uint32_t>(out, static_cast<uint32_t>(shape.size()));
  for (int64_t d : shape) put<int64_t>(out, d);
  put<uint64_t>(out, 0);
  put<uint64_t>(out, pd::io::fnv1a64("", 0));
  put<uint64_t>(out, pd::io::fnv1a64(out.data(), out.size()));
  return out;
}

}  // namespace

TEST_CASE("shape limits: rank, extent and element count", "[limits]") {
  CHECK_NOTHROW(pd::check_shape_limits(Shape(pd::kMaxRank, 1), "x"));
  CHECK_THAT(error_of([] { pd::check_shape_limits(Shape(pd::kMaxRank + 1, 1), "x.npy"); }),
             Catch::StartsWith("x.npy: rank 65 is above the limit of 64"));
  CHECK(pd::checked_numel({1 << 20, 1 << 20}, "x") == pd::kMaxNumel);
  CHECK_THAT(error_of([] { pd::check_shape_limits({(1 << 20) + 1, 1 << 20}, "x"); }), Catch::Contains("more than"));
  // An empty tensor has no elements, but no extent may pass the limit either, nor may the other extents
  // multiply past it (its strides would overflow: fuzz_idx found that with UBSan).
  CHECK_NOTHROW(pd::check_shape_limits({0, pd::kMaxNumel}, "x"));
  CHECK_THAT(error_of([] { pd::check_shape_limits({0, pd::kMaxNumel + 1}, "x"); }), Catch::Contains("extent"));
  CHECK_THAT(error_of([] { pd::check_shape_limits({0, 1 << 30, 1 << 30}, "x"); }), Catch::Contains("more than"));
  // Strides of such a tensor made by hand wrap instead of overflowing (UBSan in the PD_FUZZ build).
  CHECK(pd::contiguous_strides({0, int64_t{1} << 40, int64_t{1} << 40, 2})[3] == 1);
  // Saturating products: extents whose true product overflows int64 are refused, not wrapped.
  CHECK_THAT(error_of([] { pd::check_shape_limits({1 << 30, 1 << 30, 1 << 30}, "x"); }), Catch::Contains("more than"));
  CHECK_THAT(error_of([] { pd::check_shape_limits({-1, 3}, "x"); }), Catch::Contains("negative"));
  CHECK_NOTHROW(pd::check_shape_limits({-1, 3}, "x", /*allow_unknown=*/true));
}

TEST_CASE("npy: a short file declaring 10^12 elements is refused before any allocation", "[limits]") {
  const std::string huge = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }");
  CHECK_THAT(error_of([&] { pd::data::parse_npy(huge, "huge.npy"); }),
             Catch::StartsWith("huge.npy") && Catch::Contains("expected 4000000000000 bytes"));
  // 2^62 f4 elements: 2^64 bytes, which wrapped to 0 in an unchecked product and matched an empty file.
  const std::string wraps = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }");
  CHECK_THAT(error_of([&] { pd::data::parse_npy(wraps, "wraps.npy"); }), Catch::Contains("limit"));
  std::string rank = "{'descr': '|u1', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 65; ++i) rank += "1,";
  CHECK_THAT(error_of([&] { pd::data::parse_npy(npy(rank + "), }", "x"), "rank.npy"); }), Catch::Contains("rank 65"));
}

TEST_CASE("idx: declared sizes are checked, gzip bombs stop at the declared size", "[limits]") {
  // 2^31 x 2^31 f64: the byte count wrapped to 0 in an unchecked product.
  const std::string wraps = idx_header(0x0E, {1u << 31, 1u << 31, 4});
  CHECK_THAT(error_of([&] { pd::data::parse_idx(wraps, "wraps.idx"); }),
             Catch::StartsWith("wraps.idx") && Catch::Contains("limit"));
  const std::string huge = idx_header(0x08, {1000000, 1000000});
  CHECK_THAT(error_of([&] { pd::data::parse_idx(huge, "huge.idx"); }), Catch::Contains("expected 1000000000000 bytes"));
  // 10 declared bytes followed by 16 MiB of zeros: a 16 KiB file that must not inflate past 18 bytes.
  const std::string bomb = gzip(idx_header(0x08, {10}) + std::string(16 << 20, '\0'));
  CHECK(bomb.size() < 64 * 1024);
  CHECK_THAT(error_of([&] { pd::data::parse_idx(bomb, "bomb.idx.gz"); }),
             Catch::StartsWith("bomb.idx.gz") && Catch::Contains("more than the 18 bytes its IDX header declares"));
  // The same file without the excess reads.
  const pd::Tensor ok = pd::data::parse_idx(gzip(idx_header(0x08, {10}) + std::string(10, '\x07')), "ok.idx.gz");
  CHECK(ok.shape() == Shape{10});
  CHECK(ok.to_vector<uint8_t>()[9] == 7);
  // Two gzip members, as `cat a.gz b.gz` makes: one file.
  const std::string whole = idx_header(0x08, {4}) + "abcd";
  const pd::Tensor two = pd::data::parse_idx(gzip(whole.substr(0, 6)) + gzip(whole.substr(6)), "two.idx.gz");
  CHECK(two.to_vector<uint8_t>()[3] == 'd');
}

TEST_CASE("idx: max_records reads the first records and reports the file's count", "[limits]") {
  std::string body;
  for (int r = 0; r < 6; ++r) body += std::string(3, static_cast<char>('a' + r));  // 6 records of 3 bytes
  const std::string file = idx_header(0x08, {6, 3}) + body;
  for (const std::string& bytes : {file, gzip(file)}) {
    int64_t records = -1;
    const pd::Tensor first = pd::data::parse_idx(bytes, "six.idx", 2, &records);
    CHECK(first.shape() == Shape{2, 3});
    CHECK(first.to_vector<uint8_t>() == std::vector<uint8_t>{'a', 'a', 'a', 'b', 'b', 'b'});
    CHECK(records == 6);
    CHECK(pd::data::parse_idx(bytes, "six.idx", 0).shape() == Shape{0, 3});
    CHECK(pd::data::parse_idx(bytes, "six.idx", 6).shape() == Shape{6, 3});  // all: every check as without a limit
    CHECK(pd::data::parse_idx(bytes, "six.idx", 100).shape() == Shape{6, 3});
  }
  // What the kept records need must be there; trailing bytes are refused when every record is read.
  CHECK_THAT(error_of([&] { pd::data::parse_idx(file.substr(0, file.size() - 14), "short.idx", 2); }),
             Catch::Contains("expected 6 bytes"));
  CHECK(pd::data::parse_idx(file.substr(0, file.size() - 12), "short.idx", 2).shape() == Shape{2, 3});
  CHECK_THAT(error_of([&] { pd::data::parse_idx(file + "zz", "long.idx", 6); }), Catch::Contains("trailing garbage"));
  CHECK(pd::data::parse_idx(file + "zz", "long.idx", 5).shape() == Shape{5, 3});
  // A gzip bomb stays one with a limit: the inflation stops past the kept records.
  const std::string bomb = gzip(idx_header(0x08, {1 << 20, 16}) + std::string(16 << 20, '\0'));
  CHECK(pd::data::parse_idx(bomb, "bomb.idx.gz", 4).shape() == Shape{4, 16});
}

TEST_CASE("tensor archive: rank and extents above the limits are refused", "[limits]") {
  CHECK(pd::io::parse_tensors(archive_with_shape({0, 3}), "ok.pdparams").tensors.at("t").shape() == Shape{0, 3});
  CHECK_THAT(error_of([] { pd::io::parse_tensors(archive_with_shape(Shape(65, 1)), "r.pdparams"); }),
             Catch::StartsWith("r.pdparams: tensor 't' has rank 65, above the limit of 64"));
  // An empty shape with an absurd extent used to reach Tensor::empty.
  CHECK_THAT(error_of([] { pd::io::parse_tensors(archive_with_shape({0, int64_t{1} << 62}), "e.pdparams"); }),
             Catch::StartsWith("e.pdparams: tensor 't'") && Catch::Contains("limit"));
}

TEST_CASE("model file: value shapes above the limits are refused", "[limits]") {
  pd::ir::Program p;
  const auto x = p.add_input("x", {pd::DType::f32, Shape(65, 1)});
  p.mark_output(p.add_op("relu", {{x}}, {})[0], "y");
  const std::string path = (std::filesystem::temp_directory_path() / ("pd_limits_" + std::to_string(::getpid()) + ".pdmodel")).string();
  pd::io::save_program(path, p);
  CHECK_THAT(error_of([&] { pd::io::load_program(path); }), Catch::Contains("rank 65 is above the limit"));
  std::filesystem::remove(path);
  std::filesystem::remove(pd::io::params_path_for(path));
}

TEST_CASE("csv: a '+' is taken before a number, not before a sign", "[limits]") {
  CHECK(pd::data::parse_csv("+1.5,2\n", "a.csv").features.to_vector<float>()[0] == 1.5f);
  CHECK_THAT(error_of([] { pd::data::parse_csv("+-1.5,2\n", "b.csv"); }), Catch::Contains("b.csv:1:1: expected a number"));
}
