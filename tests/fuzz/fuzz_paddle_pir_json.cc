// The Paddle 3.x importer: a PIR .json program and its .pdiparams.
#include "fuzz_paddle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pd_fuzz::import_paddle(data, size, "model.json");
}
