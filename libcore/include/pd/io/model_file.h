// Model files: a Program as MODEL.pdmodel (the graph, a protobuf message of our own schema in a checksummed
// envelope) plus MODEL.pdiparams (the parameters, a tensor archive with per-tensor checksums). Both are
// written atomically; the .pdmodel records the params file's checksum, so a mismatched pair is refused,
// as is a truncated, corrupted or newer-version file. docs/model-files.md describes the format.
//
//   pd::io::save_program("runs/lenet/model.pdmodel", program);   // + runs/lenet/model.pdiparams
//   pd::ir::Program p = pd::io::load_program("runs/lenet/model.pdmodel");  // verified
#pragma once
#include <map>
#include <string>

#include "pd/ir/program.h"

namespace pd::io {

// The envelope and Model message layout. Readers refuse files with a larger number.
inline constexpr uint32_t kModelFormatVersion = 1;

// The version of an op's semantics in this build (1 for every op today). An ops.yaml change that alters
// what an existing op computes for the same inputs and attributes must bump it here, so that older
// builds refuse models relying on the new meaning. Throws pd::Error for an unknown op.
uint32_t op_version(const std::string& op);

// "dir/model.pdmodel" -> "dir/model.pdiparams".
std::string params_path_for(const std::string& model_path);

// `path` is the .pdmodel; the params go next to it. `metadata` is free text stored in the .pdmodel.
void save_program(const std::string& path, const ir::Program& program,
                  const std::map<std::string, std::string>& metadata = {});
// Loads both files, checks checksums, versions and the pair, and runs ir::verify.
ir::Program load_program(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);
// load_program on bytes already read, with the params already loaded (whether they belong to the model is
// the caller's check); `path` names the model in messages. The fuzz target's entry point.
ir::Program parse_program(const std::string& bytes, const std::map<std::string, Tensor>& params,
                          const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

}  // namespace pd::io
