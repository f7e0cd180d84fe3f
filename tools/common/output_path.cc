#include "common/output_path.h"

#include <filesystem>

#include "pd/core/error.h"
#include "pd/io/model_file.h"

namespace pd::tools {
namespace {

namespace fs = std::filesystem;

// Same file: by identity when both exist (links, "./a" vs "a"), else by normalised absolute path.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

}  // namespace

void check_model_output(const std::string& in_model, const std::string& out_model, bool in_has_params) {
  const std::string ext = fs::path(out_model).extension().string();
  PD_CHECK(ext == ".pdmodel", ErrorCode::kInvalidArgument,
           "{}: the output is written as NAME.pdmodel with NAME.pdiparams beside it, but its extension is '{}'", out_model,
           ext.empty() ? "(none)" : ext);
  std::error_code ec;
  PD_CHECK(!fs::is_directory(out_model, ec), ErrorCode::kInvalidArgument, "{}: is a directory; give a file name for the output",
           out_model);
  const std::string in_params = io::params_path_for(in_model), out_params = io::params_path_for(out_model);
  PD_CHECK(!same_file(in_model, out_model) && !same_file(in_model, out_params) &&
               !(in_has_params && (same_file(in_params, out_params) || same_file(in_params, out_model))),
           ErrorCode::kInvalidArgument, "{}: the output would replace the input model {} (or its params {}); write it elsewhere",
           out_model, in_model, in_params);
}

}  // namespace pd::tools
