// Checks the standalone driver itself: an exception other than pd::Error must fail the run (ctest
// expects this target to fail on its corpus, which holds "boom").
#include <stdexcept>
#include <string>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pd_fuzz::run([&] {
    if (pd_fuzz::bytes(data, size).find("boom") != std::string::npos) throw std::logic_error("not a pd::Error");
  });
}
