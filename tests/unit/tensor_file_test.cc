// The tensor archive: round trips, and refusal of truncated, corrupted and newer-version files.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "pd/io/tensor_file.h"
#include "pd/pd.h"
#include "test_util.h"

namespace fs = std::filesystem;
using pd::Tensor;
using pd::test::error_of;

namespace {

// A fresh directory per test case, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("pd_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    ::chmod(path.c_str(), 0755);
    fs::remove_all(path);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::map<std::string, Tensor> sample_tensors() {
  return {
      {"fc.weight", Tensor::from_vector<float>({1.5f, -2, 3, 4, 5, 6}, {2, 3})},
      {"scalar", Tensor::scalar<double>(2.25)},
      {"ids", Tensor::from_vector<int64_t>({-1, 0, int64_t{1} << 40}, {3})},
      {"bytes", Tensor::from_vector<uint8_t>({0, 255}, {2, 1})},
      {"mask", Tensor::from_vector<bool>({true, false, true}, {3})},
      {"half", pd::ops::cast(Tensor::from_vector<float>({0.5f, -1}, {2}), pd::DType::f16)},
      {"empty", Tensor::empty({0, 3}, pd::DType::i32)},
  };
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  size_t n = static_cast<size_t>(ca.numel()) * pd::dtype_size(ca.dtype());
  return n == 0 || std::memcmp(ca.raw_data(), cb.raw_data(), n) == 0;
}

}  // namespace

TEST_CASE("tensor archive round trip of several dtypes, 0-D and empty tensors", "[io]") {
  TempDir dir;
  auto tensors = sample_tensors();
  tensors["view"] = pd::ops::transpose(tensors["fc.weight"], {1, 0});  // saved as its values
  std::map<std::string, std::string> meta{{"arch", "lenet"}, {"empty", ""}, {"binary", std::string("a\0b", 3)}};
  pd::io::save_tensors(dir / "m.pdt", tensors, meta);
  auto archive = pd::io::load_tensors(dir / "m.pdt");
  CHECK(archive.metadata == meta);
  REQUIRE(archive.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    INFO(name);
    CHECK(same_bytes(archive.tensors.at(name), t));
  }
  CHECK(archive.tensors.at("scalar").dim() == 0);
  CHECK(archive.tensors.at("view").to_vector<float>() == std::vector<float>{1.5f, 4, -2, 5, 3, 6});
  // Nothing else is left in the directory (no temp files).
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);

  pd::io::save_tensors(dir / "none.pdt", {});
  CHECK(pd::io::load_tensors(dir / "none.pdt").tensors.empty());
}

TEST_CASE("fnv1a64 matches the reference values", "[io]") {
  CHECK(pd::io::fnv1a64("", 0) == 0xcbf29ce484222325ull);
  CHECK(pd::io::fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(pd::io::fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
}

TEST_CASE("truncated tensor files are refused at every length", "[io]") {
  TempDir dir;
  const std::string path = dir / "m.pdt";
  pd::io::save_tensors(path, sample_tensors(), {{"k", "v"}});
  const std::string bytes = slurp(path);
  const std::string cut = dir / "cut.pdt";
  for (size_t n = 0; n < bytes.size(); ++n) {
    spit(cut, bytes.substr(0, n));
    std::string msg = error_of([&] { pd::io::load_tensors(cut); });
    INFO("cut at " << n << ": " << msg);
    CHECK(msg.rfind(cut, 0) == 0);  // messages start with the path
    CHECK_THAT(msg, Catch::Contains("truncated"));
  }
  spit(cut, bytes + "x");
  CHECK_THROWS_AS(pd::io::load_tensors(cut), pd::Error);
}

TEST_CASE("corrupted tensor files are refused with a checksum error", "[io]") {
  TempDir dir;
  const std::string path = dir / "m.pdt";
  pd::io::save_tensors(path, {{"w", Tensor::from_vector<float>({1, 2, 3, 4}, {4})}}, {{"arch", "lenet"}});
  const std::string bytes = slurp(path);
  const std::string bad = dir / "bad.pdt";

  std::string flipped = bytes;
  flipped[bytes.size() - 8 - 3] ^= 0x01;  // inside w's data, just before the trailer
  spit(bad, flipped);
  CHECK_THAT(error_of([&] { pd::io::load_tensors(bad); }), Catch::Contains("checksum mismatch in tensor 'w'"));

  flipped = bytes;
  flipped[bytes.find("lenet")] ^= 0x20;  // metadata: only the trailer covers it
  spit(bad, flipped);
  CHECK_THAT(error_of([&] { pd::io::load_tensors(bad); }), Catch::Contains("checksum"));

  // Any single flipped byte is refused, never loaded and never a crash.
  for (size_t i = 0; i < bytes.size(); ++i) {
    flipped = bytes;
    flipped[i] ^= 0x10;
    spit(bad, flipped);
    INFO("byte " << i);
    CHECK_THROWS_AS(pd::io::load_tensors(bad), pd::Error);
  }
}

TEST_CASE("newer versions and foreign files are refused", "[io]") {
  TempDir dir;
  const std::string path = dir / "m.pdt";
  pd::io::save_tensors(path, sample_tensors());
  std::string bytes = slurp(path);
  bytes[8] = 2;  // u32 version right after the magic
  spit(path, bytes);
  std::string msg = error_of([&] { pd::io::load_tensors(path); });
  CHECK(msg.rfind(path, 0) == 0);
  CHECK_THAT(msg, Catch::Contains("newer paddle-cpp") && Catch::Contains("format version 2") &&
                      Catch::Contains("up to 1"));

  spit(path, "hello, this is not a tensor archive");
  CHECK_THAT(error_of([&] { pd::io::load_tensors(path); }), Catch::Contains("not a paddle-cpp tensor file"));
  try {
    pd::io::load_tensors(dir / "missing.pdt");
    FAIL("no error");
  } catch (const pd::Error& e) {
    CHECK(e.code() == pd::ErrorCode::kIO);
    CHECK_THAT(std::string(e.what()), Catch::StartsWith(dir / "missing.pdt"));
  }
}

TEST_CASE("a failed save leaves the original file intact", "[io]") {
  TempDir dir;
  const std::string path = dir / "m.pdt";
  const Tensor v1 = Tensor::from_vector<float>({1, 2}, {2});
  pd::io::save_tensors(path, {{"w", v1}});
  const std::string original = slurp(path);
  const std::map<std::string, Tensor> big{{"w", pd::ops::zeros({4096})}};
  auto only_original_left = [&] {
    CHECK(slurp(path) == original);
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  };

  SECTION("the target path is a directory") {
    fs::create_directory(dir / "sub");
    try {
      pd::io::save_tensors(dir / "sub", big);
      FAIL("no error");
    } catch (const pd::Error& e) {
      CHECK(e.code() == pd::ErrorCode::kIO);
      CHECK_THAT(std::string(e.what()), Catch::StartsWith(dir / "sub"));
    }
    CHECK(fs::is_directory(dir / "sub"));
    fs::remove(dir / "sub");
    only_original_left();
  }
  SECTION("the write fails part way (file size limit)") {
    // Works for root too, unlike permissions: writes past the limit fail with EFBIG.
    rlimit old{};
    ::getrlimit(RLIMIT_FSIZE, &old);
    auto prev_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old;
    lim.rlim_cur = 100;
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string msg = error_of([&] { pd::io::save_tensors(path, big); });
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, prev_handler);
    CHECK_THAT(msg, Catch::StartsWith(path) && Catch::Contains("write"));
    only_original_left();
  }
  SECTION("the directory is not writable") {
    ::chmod(dir.path.c_str(), 0555);
    const bool enforced = ::access(dir.path.c_str(), W_OK) != 0;  // root ignores the mode
    std::string msg = error_of([&] { pd::io::save_tensors(path, big); });
    ::chmod(dir.path.c_str(), 0755);
    if (enforced) CHECK_THAT(msg, Catch::StartsWith(path));
    else CHECK(pd::io::load_tensors(path).tensors.at("w").numel() == 4096);
    if (enforced) only_original_left();
  }
  SECTION("an invalid tensor is refused before anything is written") {
    CHECK_THROWS_AS(pd::io::save_tensors(path, {{"w", Tensor()}}), pd::Error);
    only_original_left();
  }
  SECTION("the parent directory does not exist") {
    CHECK_THROWS_AS(pd::io::save_tensors(dir / "no/such/dir/m.pdt", big), pd::Error);
    only_original_left();
  }
}
