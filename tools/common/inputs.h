// Where pd-infer's (and pd-convert --verify's) inputs come from: .npy files, random data of the declared shapes, or a labelled
// test set (common/test_set.h).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "common/test_set.h"
#include "pd/ir/program.h"

namespace pd::tools {

// `--input name=file.npy` pairs; names are checked against the program (the message lists its inputs).
std::map<std::string, Tensor> read_inputs(const ir::Program& p, const std::vector<std::string>& specs);
// Normal(0, 1) floats, zeros for integer and bool inputs (always valid indices); -1 extents become `batch`.
std::map<std::string, Tensor> random_inputs(const ir::Program& p, int64_t batch, uint64_t seed);

}  // namespace pd::tools
