// The tensor archive (.pdiparams, .pdparams, checkpoints). The structure is checked before the checksums,
// so mutations reach every size and shape check without fixing checksums up.
#include "fuzz_util.h"
#include "pd/io/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pd_fuzz::run([&] { pd::io::parse_tensors(pd_fuzz::bytes(data, size), "fuzz.pdparams"); });
}
