#include "writer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "op_model.h"

namespace pd::codegen {

void write_if_changed(const std::string& path, const std::string& content) {
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      if (ss.str() == content) return;
    }
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) throw CodegenError(path + ": cannot write");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace pd::codegen
