// Formats by content: our envelope's magic, a JSON document with Paddle's PIR markers, and the first
// protobuf tags of the two protobuf formats (ONNX's ModelProto starts with ir_version, a varint in field 1;
// Paddle's ProgramDesc with its blocks, a message in field 1), confirmed for ONNX by a full parse.
#include "pd/io/model_format.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cctype>

#include "pd/io/tensor_file.h"

namespace pd::io {

const char* model_format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::PdModel: return "paddle-cpp .pdmodel";
    case ModelFormat::Onnx: return "ONNX";
    case ModelFormat::PaddleProgramDesc: return "PaddlePaddle 2.x ProgramDesc (.pdmodel)";
    case ModelFormat::PaddlePir: return "PaddlePaddle 3.x PIR program (.json)";
    case ModelFormat::Unknown: break;
  }
  return "unknown";
}

ModelFormat detect_model_format(const std::string& path, std::string* what) {
  const std::string bytes = read_file_bytes(path);
  auto say = [&](const std::string& s) {
    if (what) *what = s;
  };
  if (bytes.empty()) {
    say("an empty file");
    return ModelFormat::Unknown;
  }
  if (bytes.compare(0, 8, std::string("PDMODEL\0", 8)) == 0) return ModelFormat::PdModel;
  size_t first = 0;
  while (first < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[first]))) ++first;
  if (first < bytes.size() && bytes[first] == '{') {
    const std::string head = bytes.substr(0, 4096);
    if (head.find("\"program\"") != std::string::npos || head.find("\"pir\"") != std::string::npos ||
        head.find("\"base_code\"") != std::string::npos)
      return ModelFormat::PaddlePir;
    say("a JSON document without PaddlePaddle PIR's \"base_code\"/\"program\" keys");
    return ModelFormat::Unknown;
  }
  const unsigned char tag = static_cast<unsigned char>(bytes[0]);
  if (tag == 0x08) {  // field 1, varint
    onnx::ModelProto m;
    if (m.ParseFromString(bytes) && m.has_graph()) return ModelFormat::Onnx;
    say("a protobuf message starting like ONNX's ModelProto that does not parse as one (truncated or corrupted?)");
    return ModelFormat::Unknown;
  }
  if (tag == 0x0a) return ModelFormat::PaddleProgramDesc;  // field 1, length-delimited
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(8, bytes.size()); ++i)
    hex += fmt::format("{:02x} ", static_cast<unsigned char>(bytes[i]));
  say(fmt::format("first bytes {}(neither a paddle-cpp envelope, ONNX, nor a PaddlePaddle program)", hex));
  return ModelFormat::Unknown;
}

}  // namespace pd::io
