// What kind of model a file holds, told by its bytes (not its name): pd-convert's input detection.
//
//   pd::io::ModelFormat f = pd::io::detect_model_format("model.pdmodel");  // PaddleProgramDesc, say
#pragma once
#include <string>

namespace pd::io {

enum class ModelFormat {
  PdModel,            // this project's .pdmodel (magic envelope)
  Onnx,               // an ONNX ModelProto
  PaddleProgramDesc,  // PaddlePaddle 2.x inference .pdmodel (a raw ProgramDesc protobuf)
  PaddlePir,          // PaddlePaddle 3.x PIR program (.json)
  Unknown,
};

const char* model_format_name(ModelFormat f);  // "ONNX", "paddle-cpp .pdmodel", ...
// Throws pd::Error (kIo) when the file cannot be read; Unknown when no format matches, with `what` (if
// given) saying what the first bytes looked like.
ModelFormat detect_model_format(const std::string& path, std::string* what = nullptr);

}  // namespace pd::io
