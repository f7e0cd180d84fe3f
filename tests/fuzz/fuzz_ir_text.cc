// The program text form parser. What it accepts must print and parse back to the same text (the
// round trip program.h promises); a difference aborts.
#include <cstdio>
#include <cstdlib>

#include "fuzz_util.h"
#include "pd/ir/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pd_fuzz::run([&] {
    const pd::ir::Program p = pd::ir::parse(pd_fuzz::bytes(data, size));
    const std::string text = pd::ir::print(p);
    const std::string again = pd::ir::print(pd::ir::parse(text));
    if (again != text) {
      std::fprintf(stderr, "pd-fuzz: the text form does not round-trip:\n%s\n---\n%s\n", text.c_str(), again.c_str());
      std::abort();
    }
    pd::ir::verify(p);
  });
}
