// ONNX fields that reach code which trusts them: external data entries (a bad offset, a location outside
// the model's directory), window attributes that libonnx's shape inference divides by, a Gather's rank. Each is refused
// with pd::Error (found with the fuzz targets).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "pd/io/onnx.h"
#include "pd/io/tensor_file.h"
#include "pd/pd.h"
#include "test_util.h"

using pd::test::error_of;

namespace {

// Protobuf by hand (the unit tests do not link libonnx): length-delimited fields and small varints.
std::string field(int number, const std::string& payload) {
  std::string out(1, static_cast<char>(number << 3 | 2));
  for (size_t n = payload.size(); ; n >>= 7) {
    out += static_cast<char>((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    if (n <= 0x7f) break;
  }
  return out + payload;
}
std::string varint_field(int number, int value) { return {static_cast<char>(number << 3), static_cast<char>(value)}; }

// y = Add(x, w), x and y f32[4], w an initializer whose data lives in external files: `entries` are its
// external_data key/value pairs.
std::string model_with_external(const std::vector<std::pair<std::string, std::string>>& entries) {
  const std::string f32_4 = field(1, varint_field(1, 1) + field(2, field(1, varint_field(1, 4))));  // TypeProto
  std::string w = varint_field(1, 4) + varint_field(2, 1) + field(8, "w");
  for (const auto& [k, v] : entries) w += field(13, field(1, k) + field(2, v));
  w += varint_field(14, 1);  // data_location: EXTERNAL
  const std::string node = field(1, "x") + field(1, "w") + field(2, "y") + field(4, "Add");
  const std::string graph = field(1, node) + field(2, "g") + field(5, w) + field(11, field(1, "x") + field(2, f32_4)) +
                            field(12, field(1, "y") + field(2, f32_4));
  return varint_field(1, 7) + field(7, graph) + field(8, field(1, "") + varint_field(2, 13));
}

// Imports the model from base/model/m.onnx with 16 bytes in base/model/weights.bin and base/x/ab.bin.
std::string import_error(const std::vector<std::pair<std::string, std::string>>& entries) {
  const auto base = std::filesystem::temp_directory_path() / ("pd_onnx_ext_" + std::to_string(::getpid()));
  std::filesystem::create_directories(base / "model");
  std::filesystem::create_directories(base / "x");
  std::ofstream((base / "model" / "m.onnx").string(), std::ios::binary) << model_with_external(entries);
  std::ofstream((base / "model" / "weights.bin").string(), std::ios::binary) << std::string(16, '\0');
  std::ofstream((base / "x" / "ab.bin").string(), std::ios::binary) << std::string(16, '\0');
  const std::string msg = error_of([&] { pd::io::import_onnx((base / "model" / "m.onnx").string()); });
  std::filesystem::remove_all(base);
  return msg;
}

}  // namespace

TEST_CASE("onnx: external data offsets must be integers", "[onnx]") {
  // The model is fine with its data where it says: the checks below are what refuses the others.
  CHECK(import_error({{"location", "weights.bin"}}).empty());
  CHECK(import_error({{"location", "weights.bin"}, {"offset", "0"}, {"length", "16"}}).empty());
  // std::stoll threw std::invalid_argument and std::out_of_range here.
  CHECK_THAT(import_error({{"location", "weights.bin"}, {"offset", "abc"}}),
             Catch::Contains("external data offset 'abc' is not a non-negative integer"));
  CHECK_THAT(import_error({{"location", "weights.bin"}, {"length", "99999999999999999999"}}),
             Catch::Contains("external data length '99999999999999999999' is not a non-negative integer"));
  CHECK_THAT(import_error({{"location", "weights.bin"}, {"offset", "-4"}}), Catch::Contains("not a non-negative"));
}

TEST_CASE("onnx: external data stays inside the model's directory", "[onnx]") {
  // base/x/ab.bin exists, so only the importer's own rule refuses it.
  CHECK_THAT(import_error({{"location", "../x/ab.bin"}}),
             Catch::Contains("'../x/ab.bin' is not a path inside the model's directory"));
}

TEST_CASE("onnx: a Conv stride of 0 is refused before shape inference divides by it", "[onnx]") {
  // fuzz_onnx found it: a SIGFPE inside libonnx's convPoolShapeInference (corpus: regress_conv_stride_0.onnx).
  const pd::ir::Program p = pd::ir::parse(
      "program {\n input %x: f32[1, 1, 4, 4]\n param %w: f32[1, 1, 3, 3]\n"
      " %1: f32[1, 1, 2, 2] = conv2d(%x, %w, none)\n output %1 as \"y\"\n}\n",
      {{"w", pd::ops::full({1, 1, 3, 3}, 1.0)}});
  const auto dir = std::filesystem::temp_directory_path() / ("pd_onnx_stride_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "conv.onnx").string();
  pd::io::export_onnx(p, path);
  std::string bytes = pd::io::read_file_bytes(path);
  const size_t at = bytes.find("strides");
  REQUIRE(at != std::string::npos);
  const size_t ints = bytes.find(std::string("@\x01@\x01", 4), at);  // field 8 (ints), varint 1, twice
  REQUIRE(ints != std::string::npos);
  bytes[ints + 3] = 0;
  pd::io::write_file_atomic(path, bytes);
  CHECK_THAT(error_of([&] { pd::io::import_onnx(path); }), Catch::Contains("attribute strides holds 0"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("onnx: a Gather of a 0-D tensor is refused before its axis is read", "[onnx]") {
  // fuzz_onnx found it: the converter read the extent of axis 0 of a scalar (regress_gather_scalar_data.onnx).
  const std::string f32_scalar = field(1, varint_field(1, 1) + field(2, ""));
  const std::string index = varint_field(2, 7) + field(8, "i") + field(9, std::string(8, '\0'));  // int64 0-D: 0
  const std::string node = field(1, "x") + field(1, "i") + field(2, "y") + field(4, "Gather");
  const std::string graph = field(1, node) + field(2, "g") + field(5, index) + field(11, field(1, "x") + field(2, f32_scalar)) +
                            field(12, field(1, "y") + field(2, f32_scalar));
  const auto dir = std::filesystem::temp_directory_path() / ("pd_onnx_gather_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "gather.onnx").string();
  std::ofstream(path, std::ios::binary) << varint_field(1, 7) + field(7, graph) + field(8, field(1, "") + varint_field(2, 13));
  CHECK_THAT(error_of([&] { pd::io::import_onnx(path); }), Catch::Contains("Gather's data must have rank 1 or more"));
  std::filesystem::remove_all(dir);
}
