// Checks on the OUT model path of pd-opt, pd-quant and pd-convert before any work, so that no command
// replaces the model it reads: OUT and its .pdiparams must be neither the input model nor its params
// (same path, a link to it, or "model" next to "model.pdmodel", whose params are the input's).
#pragma once
#include <string>

namespace pd::tools {

// Throws pd::Error (kInvalidArgument) when OUT is not NAME.pdmodel or would overwrite
// the input pair at `in_model`. `in_has_params`: false for an input that keeps its weights inside (an
// ONNX model), whose NAME.pdiparams beside it is not its own (m.onnx -> m.pdmodel + m.pdiparams).
void check_model_output(const std::string& in_model, const std::string& out_model, bool in_has_params = true);

}  // namespace pd::tools
