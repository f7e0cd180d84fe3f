// ONNX import and export (docs/pd-convert.md). Import maps every ONNX node onto ops of ops.yaml through
// one table (libcore/src/io/onnx/import_ops.cc) and folds shape computations at import time with the
// constant folding pd-opt runs (opsets 11-23: torch.onnx.export's default exporter writes 20); export
// writes any portable program at opset 11-17.
//
//   pd::io::OnnxImportOptions opt;
//   opt.input_shapes["input"] = {1, 3, 224, 224};        // optional: fixes dynamic extents
//   pd::ir::Program p = pd::io::import_onnx("resnet18.onnx", opt);
//   pd::io::export_onnx(p, "back.onnx");                  // opset 13, batch as the symbolic dim "batch"
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pd/ir/program.h"

namespace pd::io {

inline constexpr int kOnnxMinOpset = 11;
inline constexpr int kOnnxMaxOpset = 17;        // export: what Debian's libonnx checker and shape inference know
inline constexpr int kOnnxMaxImportOpset = 23;  // import: newer models are checked through an opset-17 view

struct OnnxImportOptions {
  std::map<std::string, Shape> input_shapes;  // overrides the file's input extents (all of them, per input; -1 keeps one)
};

struct OnnxImportReport {
  int64_t opset = 0, ir_version = 0;
  std::string producer;          // "pytorch 2.15.0"
  int64_t nodes = 0;             // in the ONNX graph
  int64_t folded = 0;            // computed at import time (shape subgraphs, constant weights)
  std::map<std::string, int64_t> node_types;  // ONNX op type -> count
};

// Reads, checks (onnx::checker, shape inference) and converts a ModelProto. Throws pd::Error with
// kInvalidArgument for a file that is not a usable ONNX model, and kNotImplemented listing every op type
// the toolchain cannot map (count and first node names) so the whole gap shows at once.
ir::Program import_onnx(const std::string& path, const OnnxImportOptions& options = {},
                        OnnxImportReport* report = nullptr);

struct OnnxExportOptions {
  int opset = 13;
  std::string producer_version;  // written as producer_version next to producer "paddle-cpp"
};

struct OnnxExportReport {
  // Ops written as several ONNX nodes (gelu as Erf arithmetic, layer_norm before opset 17, ...): a model
  // re-imported from the file computes these with other kernels, equal within rounding, not bitwise.
  std::map<std::string, int64_t> decomposed;
};

// Writes `program` atomically as an ONNX model (initializers keep the param names, inputs and outputs
// keep theirs, -1 extents become symbolic dims: "batch" for the leading one). The result passes
// onnx::checker and full shape inference before it is written. Lowered programs and ops without an ONNX
// form are refused with the list of them.
void export_onnx(const ir::Program& program, const std::string& path, const OnnxExportOptions& options = {},
                 OnnxExportReport* report = nullptr);

}  // namespace pd::io
