// A model pair is written as a pair: a failed save leaves the old pair loadable and nothing new beside
// it, and a save cut between its two renames is completed from the pending model on load.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "pd/io/file_pair.h"
#include "pd/io/model_file.h"
#include "pd/pd.h"

namespace fs = std::filesystem;
namespace ir = pd::ir;

namespace {

struct PairDir {
  fs::path path;
  PairDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("pd_pair_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~PairDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// x -> linear -> relu; `seed` tells two saves apart by their weights.
ir::Program tiny(uint64_t seed) {
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::f32, {-1, 3}});
  auto w = p.add_param("fc.weight", pd::ops::normal({2, 3}, 0, 1, seed));
  auto b = p.add_param("fc.bias", pd::ops::normal({2}, 0, 1, seed + 1));
  auto h = p.add_op("linear", {{x}, {w}, {b}})[0];
  p.mark_output(p.add_op("relu", {{h}})[0], "y");
  return p;
}

bool same_weights(const ir::Program& a, const ir::Program& b) {
  return a.params().at("fc.weight").to_vector<float>() == b.params().at("fc.weight").to_vector<float>();
}

}  // namespace

TEST_CASE("write_pair_atomic writes both files and leaves no temporaries", "[io][pair]") {
  PairDir d;
  pd::io::write_pair_atomic(d / "a.params", "P1", d / "a.model", "M1");
  pd::io::write_pair_atomic(d / "a.params", "P2", d / "a.model", "M2");
  CHECK(slurp(d / "a.params") == "P2");
  CHECK(slurp(d / "a.model") == "M2");
  CHECK(d.names() == std::vector<std::string>{"a.model", "a.params"});
}

TEST_CASE("a pair whose second file cannot be written leaves the old pair as it was", "[io][pair]") {
  PairDir d;
  pd::io::write_pair_atomic(d / "a.params", "P1", d / "a.model", "M1");
  // The second target turns into a directory: its rename must fail after the first one succeeded.
  fs::remove(d / "a.model");
  fs::create_directories(d / "a.model" + "/inside");
  CHECK_THROWS_WITH(pd::io::write_pair_atomic(d / "a.params", "P2", d / "a.model", "M2"),
                    Catch::Contains("a.model") && Catch::Contains("directory"));
  CHECK(slurp(d / "a.params") == "P1");
  CHECK(d.names() == std::vector<std::string>{"a.model", "a.params"});
}

TEST_CASE("save_program into a path that cannot hold the model writes no params", "[io][pair]") {
  PairDir d;
  pd::io::save_program(d / "m.pdmodel", tiny(1));
  const std::string params_before = slurp(d / "m.pdiparams");
  fs::create_directories(d / "sub");
  CHECK_THROWS(pd::io::save_program(d / "missing/m.pdmodel", tiny(2)));  // no such directory
  CHECK_THROWS(pd::io::save_program(d / "m.pdiparams", tiny(2)));       // model and params one file
  CHECK(slurp(d / "m.pdiparams") == params_before);
  CHECK(same_weights(pd::io::load_program(d / "m.pdmodel"), tiny(1)));
  CHECK(d.names() == std::vector<std::string>{"m.pdiparams", "m.pdmodel", "sub"});
}

TEST_CASE("a save cut between its renames is completed from the pending model; a mixed pair is refused", "[io][pair]") {
  PairDir d, other;
  pd::io::save_program(d / "m.pdmodel", tiny(1));
  pd::io::save_program(other / "m.pdmodel", tiny(2));
  // What a save of tiny(2) killed after its first rename leaves: new params, old model, new pending model.
  fs::copy_file(other / "m.pdiparams", d / "m.pdiparams", fs::copy_options::overwrite_existing);
  CHECK_THROWS_WITH(pd::io::load_program(d / "m.pdmodel"), Catch::Contains("come from different saves"));
  fs::copy_file(other / "m.pdmodel", pd::io::pending_path(d / "m.pdmodel"));
  CHECK(same_weights(pd::io::load_program(d / "m.pdmodel"), tiny(2)));
  // A pending model that does not match the params in place is no evidence: the old pair still loads.
  PairDir third;
  pd::io::save_program(third / "m.pdmodel", tiny(1));
  fs::copy_file(other / "m.pdmodel", pd::io::pending_path(third / "m.pdmodel"));
  CHECK(same_weights(pd::io::load_program(third / "m.pdmodel"), tiny(1)));
}
