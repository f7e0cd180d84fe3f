// What the two PaddlePaddle readers (2.x ProgramDesc, 3.x PIR JSON) produce and the importer consumes:
// one op list in ProgramDesc's vocabulary (op types like "elementwise_add", named input/output slots like
// "X", attributes by name), so that the op mapping is one table for both formats (import_ops.cc).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/ops/attr.h"

namespace pd::io::paddle_import {

struct PaddleVar {
  DType dtype = DType::f32;
  Shape shape;  // -1 for an extent known at run time only
  bool has_type = false;
};

struct PaddleOp {
  std::string type;  // "conv2d", "elementwise_add", ... (PIR names translated)
  std::map<std::string, std::vector<std::string>> inputs, outputs;  // slot -> variable names
  AttrMap attrs;
  int64_t index = 0;  // position in the source program, for messages
  std::string where() const;  // "op #12 conv2d (-> conv2d_0.tmp_0)"
};

struct PaddleGraph {
  std::string format;  // "ProgramDesc" or "PIR"
  int64_t version = 0;
  std::vector<std::string> feeds;    // input variables, in feed column order
  std::vector<std::string> fetches;  // output variables, in fetch column order
  std::vector<std::string> output_names;  // what Paddle's predictor calls them (PIR: "fetch_name_0")
  std::vector<PaddleOp> ops;         // without feed/fetch
  std::map<std::string, PaddleVar> vars;
  std::vector<std::string> params;           // persistable variables, in .pdiparams order (sorted by name)
  std::map<std::string, Tensor> constants;   // values known in the program itself (PIR full, fill_constant)
};

// Reader of the 2.x ProgramDesc (read_program_desc.cc) and the 3.x PIR JSON (read_pir_json.cc). Both
// throw pd::Error (kParse) naming the file and the place for a malformed program.
PaddleGraph read_program_desc(const std::string& path);
PaddleGraph read_pir_json(const std::string& path);

// The save_combine parameter file: one serialized tensor per name of `graph.params`, in that order, each
// checked against the program's declared dtype and shape (read_params.cc).
std::map<std::string, Tensor> read_params(const std::string& path, const PaddleGraph& graph);

// The element type of a Paddle VarType code / PIR type name ("0.t_f32"); throws kNotImplemented naming
// `where` for types the toolchain has no dtype for.
DType dtype_of_var_type(int code, const std::string& where);
DType dtype_of_pir_type(const std::string& name, const std::string& where);

// PIR op names onto ProgramDesc's: the slots of PIR's positional inputs and outputs, renamed attributes.
// A slot named "@attr" is an input that must be a constant and becomes attribute `attr`.
struct PirOpName {
  const char* pir;
  const char* legacy;
  std::vector<const char*> inputs;
  std::vector<const char*> outputs;
  std::vector<std::pair<const char*, const char*>> attr_renames;  // PIR name -> ProgramDesc name
};
const PirOpName* find_pir_op(const std::string& pir_type);

}  // namespace pd::io::paddle_import
