// pd-codegen's ops.yaml parser and validator; its documented error is CodegenError ("FILE:LINE:COL: ...").
#include "fuzz_util.h"
#include "op_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pd_fuzz::run<pd::codegen::CodegenError>([&] { pd::codegen::parse_ops(pd_fuzz::bytes(data, size), "fuzz.yaml"); });
}
