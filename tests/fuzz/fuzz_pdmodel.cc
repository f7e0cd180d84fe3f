// The .pdmodel envelope + protobuf + ir::verify, with its params. An input is the .pdmodel file, then
// optionally its .pdiparams (which starts with the magic "PDTENSOR"). The target rewrites the envelope's
// size and checksum (and the archive's trailer checksum) to match, so that mutations reach the protobuf
// and the program checks instead of stopping at the checksum; the unit tests cover the envelope itself.
#include <cstring>

#include "fuzz_quiet_protobuf.h"
#include "fuzz_util.h"
#include "pd/io/model_file.h"
#include "pd/io/tensor_file.h"

namespace {

void fix_trailer(std::string& file, size_t header) {
  if (file.size() < header + 8) return;
  const size_t body = file.size() - 8;
  if (header >= 20) {  // the .pdmodel envelope: magic, u32 version, u64 payload size
    const uint64_t payload = body - header;
    std::memcpy(file.data() + 12, &payload, 8);
  }
  const uint64_t sum = pd::io::fnv1a64(file.data(), body);
  std::memcpy(file.data() + body, &sum, 8);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = pd_fuzz::bytes(data, size);
  const size_t at = input.find("PDTENSOR");
  std::string model = input.substr(0, at), params = at == std::string::npos ? "" : input.substr(at);
  fix_trailer(model, 20);
  fix_trailer(params, 8);
  return pd_fuzz::run([&] {
    std::map<std::string, pd::Tensor> tensors;
    if (!params.empty()) tensors = pd::io::parse_tensors(params, "fuzz.pdiparams").tensors;
    pd::io::parse_program(model, tensors, "fuzz.pdmodel");
  });
}
