// Models newer than the ONNX library we check with. Debian's libonnx 1.12 (its checker and shape
// inference) knows the default domain up to opset 17, but torch.onnx.export's default exporter (dynamo)
// writes opset 18 and later (torch 2.15: 20). Such a model is checked through an opset-17 view of it;
// the converters then read the model itself, at its own opset.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

namespace pd::io::onnx_import {

inline constexpr int kCheckerMaxOpset = 17;

// A copy of `model` that the opset-17 checker accepts: a node in a form of opsets 18+ is rewritten to its
// opset-17 equivalent where that is exact (ReduceMean's axes input back to the attribute, Resize's new
// attributes at their defaults dropped, ...), and otherwise, like op types new since opset 18 (Gelu), moved
// to a private domain that the checker and shape inference pass over: its converter checks it instead.
// `model_dir` resolves external data of the constants read.
onnx::ModelProto opset17_view(const onnx::ModelProto& model, const std::string& model_dir);

}  // namespace pd::io::onnx_import
