// Model files (.pdmodel + .pdiparams): round trips, and refusal of cut, flipped, version-bumped and
// mismatched files with a message.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "pd/exec/executor.h"
#include "pd/io/model_file.h"
#include "pd/io/tensor_file.h"
#include "pd/pd.h"

namespace fs = std::filesystem;
using pd::Tensor;
namespace ir = pd::ir;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("pd_model_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Envelope: magic(8) version(4) size(8) payload checksum(8). Rewrites the trailer after an edit, so
// that the damage under test is the only one.
constexpr size_t kHeader = 20;
std::string reseal(std::string bytes) {
  bytes.resize(bytes.size() - 8);
  const uint64_t sum = pd::io::fnv1a64(bytes.data(), bytes.size());
  bytes.append(reinterpret_cast<const char*>(&sum), 8);
  return bytes;
}

// input -> linear(param, param) -> relu -> softmax, with attributes of several kinds on the way.
ir::Program small_program(uint64_t seed) {
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::f32, {-1, 6}});
  auto w = p.add_param("fc.weight", pd::ops::normal({4, 6}, 0, 1, seed));
  auto b = p.add_param("fc.bias", pd::ops::normal({4}, 0, 1, seed + 1));
  auto h = p.add_op("linear", {{x}, {w}, {b}})[0];
  p.rename(h, "hidden");  // names other than the automatic ones survive the round trip
  auto c = p.add_op("clip", {{h}}, {{"min", -0.5}, {"max", 2.0}})[0];
  auto s = p.add_op("softmax", {{c}}, {{"axis", int64_t{-1}}})[0];
  auto r = p.add_op("reshape", {{s}}, {{"shape", std::vector<int64_t>{-1, 2, 2}}})[0];
  p.mark_output(r, "probs");
  p.mark_output(h, "logits");
  return p;
}

std::string load_error(const std::string& path) {
  try {
    pd::io::load_program(path);
  } catch (const pd::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("model file: save and load give the same program, params and results", "[modelfile]") {
  TempDir dir;
  ir::Program p = small_program(1);
  pd::io::save_program(dir / "m.pdmodel", p, {{"name", "small"}});
  CHECK(fs::exists(dir / "m.pdiparams"));
  std::map<std::string, std::string> meta;
  ir::Program q = pd::io::load_program(dir / "m.pdmodel", &meta);
  CHECK(meta.at("name") == "small");
  CHECK(ir::print(q) == ir::print(p));
  CHECK(q.find("hidden") != ir::kNoValue);
  REQUIRE(q.params().size() == 2);
  CHECK(q.params().at("fc.weight").to_vector<float>() == p.params().at("fc.weight").to_vector<float>());
  Tensor x = pd::ops::normal({3, 6}, 0, 1, 9);
  auto a = pd::exec::Executor(p).run({{"x", x}}), b = pd::exec::Executor(q).run({{"x", x}});
  REQUIRE(b.size() == 2);
  CHECK(a[0].to_vector<float>() == b[0].to_vector<float>());
  CHECK(a[1].to_vector<float>() == b[1].to_vector<float>());
  // Deterministic bytes: saving again gives the same file.
  const std::string first = slurp(dir / "m.pdmodel");
  pd::io::save_program(dir / "m.pdmodel", q, {{"name", "small"}});
  CHECK(slurp(dir / "m.pdmodel") == first);
  CHECK(pd::io::op_version("linear") == 1);
  CHECK(pd::io::params_path_for("a/b/model.pdmodel") == "a/b/model.pdiparams");
}

// pd-opt -O2 on an imported DenseNet wrote a file that did not load: while loading, an automatic name of
// one batch_norm result took the saved name of another.
TEST_CASE("model file: multi-result ops keep saved names that automatic names would take", "[modelfile]") {
  TempDir dir;
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::f32, {-1, 2, 3, 3}});
  auto a = p.add_op("relu", {{x}})[0];
  p.rename(a, "670");
  auto b = p.add_op("relu", {{a}})[0];
  p.rename(b, "4");
  auto c = p.add_op("relu", {{b}})[0];
  p.rename(c, "5");
  auto ones = p.add_param("bn.scale", pd::ops::full({2}, 1.0)), zeros = p.add_param("bn.bias", pd::ops::full({2}, 0.0));
  auto bn = p.add_op("batch_norm", {{c}, {ones}, {zeros}, {zeros}, {ones}}, {{"training", false}});
  REQUIRE(bn.size() == 3);
  for (size_t r = 0; r < bn.size(); ++r) p.rename(bn[r], "tmp" + std::to_string(r));  // "6" is one's automatic name
  for (size_t r = 0; r < bn.size(); ++r) p.rename(bn[r], std::to_string(6 + r));
  p.mark_output(bn[0], "y");
  pd::io::save_program(dir / "m.pdmodel", p);
  ir::Program q = pd::io::load_program(dir / "m.pdmodel");
  CHECK(ir::print(q) == ir::print(p));
}

TEST_CASE("model file: damaged files are refused with a message", "[modelfile]") {
  TempDir dir;
  const std::string path = dir / "m.pdmodel";
  pd::io::save_program(path, small_program(1));
  const std::string good = slurp(path);

  SECTION("cut at every length") {
    for (size_t n : {size_t{0}, size_t{5}, size_t{15}, kHeader, good.size() / 2, good.size() - 1}) {
      spit(path, good.substr(0, n));
      INFO("cut to " << n << " bytes");
      CHECK_THAT(load_error(path), Catch::Contains("truncated") || Catch::Contains("not a paddle-cpp model"));
    }
  }
  SECTION("flipped bytes") {
    for (size_t at : {kHeader + 3, good.size() / 2, good.size() - 12}) {
      std::string bad = good;
      bad[at] = static_cast<char>(bad[at] ^ 0x5a);
      spit(path, bad);
      CHECK_THAT(load_error(path), Catch::Contains("checksum mismatch"));
    }
  }
  SECTION("newer envelope version") {
    std::string bad = good;
    bad[8] = 2;
    spit(path, reseal(bad));
    CHECK_THAT(load_error(path), Catch::Contains("newer paddle-cpp") && Catch::Contains("version 2"));
  }
  SECTION("message version differs from the envelope") {
    std::string bad = good;
    REQUIRE(bad[kHeader] == 0x08);  // field 1 (format_version), varint, written first
    bad[kHeader + 1] = 2;
    spit(path, reseal(bad));
    CHECK_THAT(load_error(path), Catch::Contains("format version 2"));
  }
  SECTION("an op version newer than this build") {
    std::string bad = good;
    const size_t at = bad.find(std::string("\x06linear\x10\x01", 9));
    REQUIRE(at != std::string::npos);
    bad[at + 8] = 2;
    spit(path, reseal(bad));
    CHECK_THAT(load_error(path), Catch::Contains("op 'linear' has version 2"));
  }
  SECTION("not a model file") {
    spit(path, "hello, this is not a model at all");
    CHECK_THAT(load_error(path), Catch::Contains("not a paddle-cpp model file"));
  }
  SECTION("params of another model") {
    pd::io::save_program(dir / "other.pdmodel", small_program(7));
    fs::copy_file(dir / "other.pdiparams", dir / "m.pdiparams", fs::copy_options::overwrite_existing);
    CHECK_THAT(load_error(path), Catch::Contains("does not belong to this model"));
  }
  SECTION("params file missing") {
    fs::remove(dir / "m.pdiparams");
    CHECK_THAT(load_error(path), Catch::Contains("m.pdiparams is missing"));
  }
}
