// The ONNX importer: protobuf, onnx::checker and shape inference, then the op mapping.
#include "fuzz_quiet_protobuf.h"
#include "fuzz_util.h"
#include "pd/io/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = pd_fuzz::temp_file("model.onnx", pd_fuzz::bytes(data, size));
  return pd_fuzz::run([&] { pd::io::import_onnx(path); });
}
