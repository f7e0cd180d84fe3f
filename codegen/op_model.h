// The in-memory form of ops.yaml that every emitter reads. Positions are kept so that later
// validation can still point at the line and column of the offending text.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pd::codegen {

struct Pos {
  int line = 0, col = 0;  // 1-based
};

enum class ArgKind { Tensor, OptionalTensor, TensorList, Int, Float, Bool, IntList, FloatList, Str, DType };

struct ArgDef {
  std::string name;
  ArgKind kind = ArgKind::Tensor;
  std::string dtype_class;             // tensors: "" (kernel dtype), "int", "bool", "any"
  std::optional<std::string> default_cpp;  // C++ expression for the default value
  std::string default_text;            // as written, for docs
  std::string enum_of;                 // str attributes typed enum(NAME): the generated enum they name
  Pos pos;
  bool is_tensor() const { return kind == ArgKind::Tensor || kind == ArgKind::OptionalTensor || kind == ArgKind::TensorList; }
};

struct OutputDef {
  std::string name;
  bool is_list = false;
  std::string dtype;     // "" = kernel dtype; "bool", "i64", or "attr:NAME"
  std::string infer;     // shape rule call, e.g. "broadcast(x, y)"
  bool differentiable = true;
  std::string inplace;   // the tensor input this output is: updated in place by the kernel and returned
  Pos pos;
};

struct Formula {
  std::vector<std::string> targets;  // input names this expression yields (several for a tuple op)
  std::string text;
  Pos pos;
};

struct SampleInput {
  std::vector<std::vector<int64_t>> shapes;  // one per tensor (lists have several; empty = absent)
  std::string dtype;                         // "" = dtype under test
  double lo = -1, hi = 1;                    // value range
  bool has_range = false;
};

struct Sample {
  std::map<std::string, SampleInput> inputs;
  std::map<std::string, std::string> attrs_cpp;  // attr -> C++ AttrValue expression
  std::string error;                              // bad-input samples: substring the message must contain
  bool gradcheck = true;                          // false: no finite-difference check of this sample
  Pos pos;
};

struct TestSpec {
  std::string ref;  // scalar C++ expression for elementwise ops; "" = naive reference by op name
  std::vector<Sample> samples;
  std::vector<Sample> bad;
  std::map<std::string, std::pair<double, double>> domain;  // input -> [lo, hi]
  bool twice_differentiable = false;
  bool gradcheck = true;
  std::string checked_by;  // op whose gradcheck verifies this (grad) op; no naive reference needed
  double f32_tol = 1e-4, f64_tol = 1e-9;
};

struct BenchSpec {
  std::vector<Sample> problems;  // shapes to time (default: the test samples)
  std::string flops;             // expression over numel(NAME) and dim(NAME, AXIS); "" = bytes-bound
};

struct OpDef {
  std::string name;
  std::string doc;
  Pos pos;
  std::vector<ArgDef> args;
  std::vector<OutputDef> outputs;
  std::string dtype_rule;   // "promote(x, y)" / "same(x)" / "attr(dtype)"
  std::string view;         // view function call, when the op is a view
  std::map<std::string, std::vector<std::string>> kernels;  // backend -> dtypes
  std::vector<std::string> nondiff;   // tensor inputs that never get a gradient
  std::vector<std::string> mutates;   // inputs written in place (running stats)
  std::vector<std::string> aliases;
  bool random = false;                // has a `seed` attr drawn from the global generator when -1
  std::string scalar;                 // elementwise formula in T over x (, y) and the float attributes
  bool activation = false;            // a fused conv / linear may apply it (needs `scalar`)
  std::vector<Formula> backward;
  std::vector<Formula> fused_backward;
  TestSpec test;
  BenchSpec bench;
  std::string category;  // section in the docs

  const ArgDef* arg(const std::string& n) const;
  const OutputDef* output(const std::string& n) const;
  std::vector<const ArgDef*> tensor_args() const;
  std::vector<const ArgDef*> attr_args() const;
  bool differentiable() const { return !backward.empty(); }
  std::vector<const ArgDef*> diff_inputs() const;  // tensor inputs that receive gradients
};

struct OpSet {
  std::vector<OpDef> ops;
  const OpDef* find(const std::string& name) const;
};

// Parses and validates ops.yaml; throws CodegenError with "FILE:LINE:COL: message".
OpSet load_ops(const std::string& path);
// The same on text already read (`file` names it in messages); the fuzz target's entry point.
OpSet parse_ops(const std::string& text, const std::string& file);

struct CodegenError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// C++ spelling helpers shared by the emitters.
std::string cpp_param_type(const ArgDef& a);  // "const Tensor&", "int64_t", ...
std::string cpp_value_type(const ArgDef& a);  // "Tensor", "int64_t", "std::vector<int64_t>"...
std::string cpp_return_type(const OpDef& op);
std::string attr_kind_name(ArgKind k);        // as written in ops.yaml

}  // namespace pd::codegen
