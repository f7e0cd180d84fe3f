// pd-codegen OPS_YAML OUT_DIR: reads the operator definitions and writes the generated glue.
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "emitters.h"
#include "op_model.h"
#include "pd_version.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::printf("pd-codegen %s\n", PD_VERSION_STRING);
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: pd-codegen OPS_YAML OUT_DIR\n");
    return 2;
  }
  try {
    pd::codegen::OpSet set = pd::codegen::load_ops(argv[1]);
    std::string out = argv[2];
    std::filesystem::create_directories(out);
    pd::codegen::emit_kernels(set, out);
    pd::codegen::emit_api(set, out);
    pd::codegen::emit_grad_nodes(set, out);
    pd::codegen::emit_schema(set, out);
    pd::codegen::emit_tests(set, out);
    pd::codegen::emit_docs(set, out);
    pd::codegen::emit_elementwise(set, out);
  } catch (const pd::codegen::CodegenError& e) {
    std::fprintf(stderr, "pd-codegen: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pd-codegen: error: %s: %s\n", argv[1], e.what());
    return 2;
  }
  return 0;
}
