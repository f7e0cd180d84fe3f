// pd-infer --device cuda[:N]: the model's program with its parameters copied to the GPU, run op by op
// through the kernel registry (no CPU lowering: its fused kernels are CPU kernels).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/ir/program.h"

namespace pd::infer {

// A copy of `program` whose parameters live on `place`. Refuses (pd::Error listing them) a program
// with ops that have no kernel for `place` (every op has a CUDA kernel today; a new op may not).
ir::Program program_on(const ir::Program& program, Place place);

std::map<std::string, Tensor> to_place(const std::map<std::string, Tensor>& tensors, Place place);

}  // namespace pd::infer
