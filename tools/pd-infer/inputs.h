// Where pd-infer's inputs come from: .npy files, random data of the declared shapes, or a labelled
// test set described like the `data:` section of a model YAML.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pd/data/loader.h"
#include "pd/ir/program.h"

namespace pd::infer {

// Thrown for bad flags and bad input files: pd-infer exits 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `--input name=file.npy` pairs; names are checked against the program (the message lists its inputs).
std::map<std::string, Tensor> read_inputs(const ir::Program& p, const std::vector<std::string>& specs);
// Normal(0, 1) floats, zeros for integer and bool inputs (always valid indices); -1 extents become `batch`.
std::map<std::string, Tensor> random_inputs(const ir::Program& p, int64_t batch, uint64_t seed);

// A labelled test set for the program's single input, transforms applied by the loader.
struct TestSet {
  std::string input;   // the program input the features feed
  data::Dataset data;  // features shaped [N, ...input extents]
  std::vector<data::Transform> transforms;
};
// SPEC is a YAML file with a `data:` section (a model YAML, e.g. pd-train's config.yaml) or the section
// itself: `test: {format, features, labels, label_column, header, limit}` and `transforms: [...]`.
// `limit` > 0 overrides the file's limit.
TestSet load_test_set(const ir::Program& p, const std::string& spec_path, int64_t limit);

}  // namespace pd::infer
