// Numeric CSV reader. The first byte picks the label column and the header flag, so that both paths
// get inputs.
#include "fuzz_util.h"
#include "pd/data/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int64_t label_column = static_cast<int8_t>(data[0]) % 8;  // -7..7
  const bool header = data[0] & 0x80;
  return pd_fuzz::run([&] { pd::data::parse_csv(pd_fuzz::bytes(data + 1, size - 1), "fuzz.csv", label_column, header); });
}
