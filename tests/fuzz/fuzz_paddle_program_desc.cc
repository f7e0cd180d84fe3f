// The Paddle 2.x importer: a ProgramDesc .pdmodel and its .pdiparams.
#include "fuzz_paddle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pd_fuzz::import_paddle(data, size, "model.pdmodel");
}
