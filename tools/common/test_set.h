// A labelled data set for a program's single input, described like the `data:` section of a model YAML
// (pd-infer --data, pd-quant --calib / --eval): `test: {format, features, labels, label_column, header,
// limit}` and `transforms: [...]`, in a model YAML (pd-train's config.yaml works) or on its own.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "pd/data/loader.h"
#include "pd/ir/program.h"

namespace pd::tools {

// Thrown for bad flags and bad input files: the tools exit 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TestSet {
  std::string input;   // the program input the features feed
  data::Dataset data;  // features shaped [N, ...input extents], labels i64
  std::vector<data::Transform> transforms;
};
// `limit` > 0 overrides the file's limit; `flag` names the option in messages ("--data").
TestSet load_test_set(const ir::Program& p, const std::string& spec_path, int64_t limit, const char* flag = "--data");

}  // namespace pd::tools
