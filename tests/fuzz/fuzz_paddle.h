// The Paddle importer targets' common part: an input is the program file, then kParamsMarker and the
// .pdiparams (optional), so that mutations reach the params reader and the op converters.
#pragma once
#include "fuzz_quiet_protobuf.h"
#include "fuzz_util.h"
#include "pd/io/paddle.h"

namespace pd_fuzz {

inline const std::string kParamsMarker = "\n#pd-fuzz-params#\n";

inline int import_paddle(const uint8_t* data, size_t size, const std::string& model_name) {
  const auto [model, params] = split(bytes(data, size), kParamsMarker);
  pd::io::PaddleImportOptions options;
  options.params_path = temp_file("model.pdiparams", params);
  const std::string path = temp_file(model_name, model);
  return run([&] { pd::io::import_paddle(path, options); });
}

}  // namespace pd_fuzz
