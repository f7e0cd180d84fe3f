// The runtime operator table generated from ops.yaml: what the IR, model files, converters, pd-bench
// and the op tests use to know an op's signature and to call it by name.
//
//   const pd::OpSchema& s = pd::op_schema("conv2d");
//   auto outs = s.call({{x}, {w}, {}}, {{"stride", pd::AttrValue(std::vector<int64_t>{2, 2})}});
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"
#include "pd/ops/attr.h"

namespace pd {

// One entry per declared tensor input: a Tensor[] input holds its list, an absent optional is empty.
using BoxedInputs = std::vector<std::vector<Tensor>>;
using BoxedFn = std::vector<Tensor> (*)(const BoxedInputs&, const AttrMap&);

struct ArgSchema {
  std::string name;
  std::string type;         // Tensor, Tensor?, Tensor[], int, float, bool, int[], float[], str, dtype
  std::string dtype_class;  // tensors: "", "int", "bool", "any"
  bool has_default;
  std::string default_text;
  bool nondiff = false;  // a tensor that never gets a gradient (ops.yaml `nondiff`: batch_norm's running statistics)
  bool is_tensor() const { return type.rfind("Tensor", 0) == 0; }
};

struct OutputSchema {
  std::string name;
  bool is_list;
  bool differentiable;
};

// A problem to time or check: shapes per tensor input (ops.yaml `bench:` entries, else the test samples).
struct BenchProblem {
  std::vector<std::vector<Shape>> shapes;  // per tensor input; empty = optional input absent
  std::vector<std::string> dtypes;         // per tensor input; "" = the dtype under test
  std::vector<std::pair<double, double>> ranges;  // value range per tensor input
  AttrMap attrs;
};

// Named shapes of one call (inputs and outputs), for FLOP formulas.
struct ShapeEnv {
  std::vector<std::pair<std::string, Shape>> shapes;
  const Shape& get(const char* name) const;
};
double bench_numel(const ShapeEnv& env, const char* name);
double bench_dim(const ShapeEnv& env, const char* name, int64_t axis);
using FlopsFn = double (*)(const ShapeEnv&);

// Dtype and shape of a tensor without its data: what the IR knows about a value.
struct TensorMeta {
  DType dtype = DType::f32;
  Shape shape;
};
using MetaInputs = std::vector<std::vector<TensorMeta>>;  // like BoxedInputs
using MetaFn = std::vector<TensorMeta> (*)(const MetaInputs&, const AttrMap&);
// The kernel an op would run for inputs of these metas and attributes on `target`, chosen once (an
// ExecPlan binds one per op); throws pd::Error as the op would. The boxed call then runs that kernel.
using BindFn = AnyKernel (*)(const MetaInputs&, const AttrMap&, Place target);
// An op's attributes parsed once into the op's own struct (attribute names checked, defaults filled),
// and the call that takes them with the boxed inputs, a bound kernel (null: the registry picks per call)
// and the op's memo slot.
// The executor prepares each op of a program once, so that a run reads no attribute map.
using PreparedAttrs = std::shared_ptr<const void>;
using PrepareFn = PreparedAttrs (*)(const AttrMap&);
using PreparedFn = std::vector<Tensor> (*)(const BoundCall&, const BoxedInputs&, const void* prepared);

struct OpSchema {
  std::string name, doc, category;
  std::vector<ArgSchema> args;
  std::vector<OutputSchema> outputs;
  bool differentiable;
  bool is_view;
  bool random;
  BoxedFn call;
  std::vector<BenchProblem> bench;  // shapes for pd-bench
  FlopsFn flops;                    // null: the op is memory-bound, report bytes
  MetaFn meta;                      // the op's dtype and shape rules without running it
  BindFn bind;                      // null for views (no kernel)
  PrepareFn prepare;                // every op, views too
  PreparedFn call_prepared;
};

const std::vector<OpSchema>& all_op_schemas();
// Output dtypes and shapes of `op` for inputs of these dtypes and shapes, running the same checks as
// the op itself (so bad inputs raise the same pd::Error). Extents of -1 (unknown until run time) are
// allowed: an output extent that depends on one comes back as -1.
std::vector<TensorMeta> infer_meta(const std::string& op, const MetaInputs& inputs, const AttrMap& attrs);
size_t op_count();
// Throws pd::Error naming the unknown op.
const OpSchema& op_schema(const std::string& name);

}  // namespace pd
