// ONNX fields that reach code which trusts them: external data entries (a bad offset, a location outside
// the model's directory) and window attributes that libonnx's shape inference divides by. Each is refused
// with pd::Error (found with the fuzz targets).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "pd/io/onnx.h"
#include "pd/io/tensor_file.h"
#include "pd/pd.h"
#include "test_util.h"

using pd::test::error_of;

namespace {

// tests/data/onnx/bad_external.onnx: Add(x, w) with w's data in "weights.bin". The external_data entry
// {location: weights.bin} is the 23 bytes at offset 34.
const std::string kModel(
    "\x08\x07\x3a\x61\x0a\x0e\x0a\x01\x78\x0a\x01\x77\x12\x01\x79\x22\x03\x41\x64\x64\x12\x01\x67\x2a\x22\x08\x04"
    "\x10\x01\x42\x01\x77\x6a\x17\x0a\x08\x6c\x6f\x63\x61\x74\x69\x6f\x6e\x12\x0b\x77\x65\x69\x67\x68\x74\x73\x2e"
    "\x62\x69\x6e\x70\x01\x5a\x13\x0a\x01\x78\x12\x0e\x0a\x0c\x08\x01\x12\x08\x0a\x02\x08\x01\x0a\x02\x08\x04\x62"
    "\x13\x0a\x01\x79\x12\x0e\x0a\x0c\x08\x01\x12\x08\x0a\x02\x08\x01\x0a\x02\x08\x04\x42\x04\x0a\x00\x10\x0d",
    107);
constexpr size_t kEntry = 34, kEntryLen = 23;

std::string import_error(const std::string& entry) {
  REQUIRE(entry.size() == kEntryLen);
  std::string model = kModel;
  model.replace(kEntry, kEntryLen, entry);
  const auto dir = std::filesystem::temp_directory_path() / ("pd_onnx_ext_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream((dir / "m.onnx").string(), std::ios::binary) << model;
  std::ofstream((dir / "weights.bin").string(), std::ios::binary) << std::string(16, '\0');
  const std::string msg = error_of([&] { pd::io::import_onnx((dir / "m.onnx").string()); });
  std::filesystem::remove_all(dir);
  return msg;
}

}  // namespace

TEST_CASE("onnx: external data offsets must be integers", "[onnx]") {
  // {offset: "abcdefghijklm"}: std::stoll threw std::invalid_argument here.
  CHECK_THAT(import_error(std::string("\x0a\x06offset\x12\x0d" "abcdefghijklm", 23)),
             Catch::Contains("external data offset 'abcdefghijklm' is not a non-negative integer"));
  CHECK_THAT(import_error(std::string("\x0a\x06offset\x12\x0d" "-999999999999", 23)),
             Catch::Contains("is not a non-negative integer"));
}

TEST_CASE("onnx: external data stays inside the model's directory", "[onnx]") {
  CHECK_THAT(import_error(std::string("\x0a\x08location\x12\x0b../x/ab.bin", 23)),
             Catch::Contains("'../x/ab.bin' is not a path inside the model's directory"));
  CHECK_THAT(import_error(std::string("\x0a\x08location\x12\x0b/etc/passwd", 23)), Catch::Contains("inside"));
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
