// IDX reader (MNIST-style datasets), plain and gzipped.
#include "fuzz_util.h"
#include "pd/data/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pd_fuzz::run([&] { pd::data::parse_idx(pd_fuzz::bytes(data, size), "fuzz.idx"); });
}
