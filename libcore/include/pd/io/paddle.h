// PaddlePaddle inference models in: 2.x's ProgramDesc `.pdmodel` and 3.x's PIR `.json`, each with the
// `.pdiparams` that paddle.jit.save / paddle.static.save_inference_model writes next to it
// (docs/pd-convert.md). Every Paddle op maps onto ops of ops.yaml through one table
// (libcore/src/io/paddle/import_ops.cc) shared by both formats.
//
//   pd::ir::Program p = pd::io::import_paddle("inference.pdmodel");   // reads inference.pdiparams too
#pragma once
#include <map>
#include <string>

#include "pd/ir/program.h"

namespace pd::io {

struct PaddleImportOptions {
  std::string params_path;                    // default: the model's path with .pdiparams for its extension
  std::map<std::string, Shape> input_shapes;  // overrides the program's input extents (per input)
};

struct PaddleImportReport {
  std::string format;                         // "ProgramDesc" or "PIR"
  int64_t version = 0;                        // the program's format version
  int64_t ops = 0;                            // Paddle ops, without feed and fetch
  int64_t folded = 0;                         // computed at import time (constant reshapes, slices of params)
  int64_t fused = 0;                          // bias adds taken into conv2d / linear
  std::map<std::string, int64_t> op_types;    // Paddle op type (ProgramDesc names) -> count
  std::string params_path;
};

// "model.pdmodel" -> "model.pdiparams", "model.json" -> "model.pdiparams".
std::string paddle_params_path(const std::string& model_path);

// Reads the program and its parameters and converts them. Throws pd::Error: kParse for files that are not a
// usable Paddle model or params that do not belong to the program, kNotImplemented listing every op type
// the toolchain cannot map (count and first outputs) before any conversion.
ir::Program import_paddle(const std::string& path, const PaddleImportOptions& options = {},
                          PaddleImportReport* report = nullptr);

}  // namespace pd::io
