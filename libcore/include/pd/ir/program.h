// Program: the static-graph form of a model, in the spirit of PaddlePaddle's PIR. An SSA graph of
// operations from ops.yaml over typed values, plus parameters stored apart from the graph.
//
//   pd::ir::Program p;
//   auto x = p.add_input("image", {pd::DType::f32, {-1, 1, 28, 28}});      // -1: unknown (batch) dim
//   auto w = p.add_param("fc.weight", weight_tensor);
//   auto y = p.add_op("linear", {{x}, {w}, {}}, {})[0];                    // output types inferred
//   p.mark_output(y, "logits");
//   pd::ir::verify(p);                                                      // throws pd::Error naming the problem
//   std::string text = pd::ir::print(p);                                    // parse(text) gives p back
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/ops/attr.h"

namespace pd::ir {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

struct ValueType {
  DType dtype = DType::f32;
  Shape shape;  // -1 for an extent unknown until run time
  bool operator==(const ValueType&) const = default;
  std::string str() const;  // "f32[-1, 1, 28, 28]"
};

enum class ValueKind : uint8_t { Input, Param, OpResult };

struct Value {
  std::string name;   // unique in the program; inputs and params keep their user-facing names
  ValueType type;
  ValueKind kind = ValueKind::OpResult;
  int32_t producer = -1;  // index into ops() for OpResult
  int32_t result_index = 0;
};

struct Operation {
  std::string type;                         // an op of ops.yaml (op_schema(type) must exist)
  std::vector<std::vector<ValueId>> inputs; // one slot per tensor input of the schema (list inputs hold
                                            // several values, absent optionals none)
  std::vector<ValueId> results;             // flattened outputs (a Tensor[] output contributes several)
  AttrMap attrs;                            // only the attributes that differ from the schema default may be
                                            // omitted; print() writes all that are present
};

class Program {
 public:
  ValueId add_input(const std::string& name, const ValueType& type);
  ValueId add_param(const std::string& name, const Tensor& value);  // type from the tensor
  // A param whose tensor comes later (set_param); parsers and loaders. verify() rejects it until then.
  ValueId declare_param(const std::string& name, const ValueType& type);
  // Appends an op; result types come from the op's shape/dtype rules (pd::infer_meta). Throws
  // pd::Error naming the op when the inputs do not fit.
  std::vector<ValueId> add_op(const std::string& type, const std::vector<std::vector<ValueId>>& inputs,
                              const AttrMap& attrs = {});
  // Appends an op with explicit result types (parsers and passes that already know them).
  std::vector<ValueId> add_op_typed(const std::string& type, const std::vector<std::vector<ValueId>>& inputs,
                                    const AttrMap& attrs, const std::vector<ValueType>& result_types);
  void mark_output(ValueId v, const std::string& name);

  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueId id) const;
  const std::vector<Operation>& ops() const { return ops_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  ValueId find(const std::string& name) const;  // kNoValue if absent
  // Renames a value (parsers keep the names of the text); throws if the name is taken.
  void rename(ValueId v, const std::string& name);
  // A name no value has yet: `base`, else base.1, base.2, ... (passes naming new params).
  std::string unique_name(const std::string& base) const;

  // Parameters live apart from the graph, keyed by the param value's name.
  const std::map<std::string, Tensor>& params() const { return params_; }
  const Tensor& param(ValueId id) const;
  void set_param(ValueId id, const Tensor& value);  // same type required

  // Rewriting (passes): replace every use of `from` by `to` (graph outputs included), remove ops, and
  // drop values and params nothing refers to. compact() renumbers; ids taken before it are invalid.
  void replace_uses(ValueId from, ValueId to);
  // Points input slot `slot` of op `op` (a one-value slot) at `v` instead; `v` must be defined before it.
  void set_input(int32_t op, size_t slot, ValueId v);
  void remove_ops(const std::vector<int32_t>& op_indices);
  void compact();
  // Ops using `v` as an input, and whether `v` is a graph output.
  std::vector<int32_t> users(ValueId v) const;
  bool is_output(ValueId v) const;
  // Inserting before an existing op (passes): the op lands at `position` and later ops shift.
  std::vector<ValueId> insert_op(int32_t position, const std::string& type, const std::vector<std::vector<ValueId>>& inputs,
                                 const AttrMap& attrs);

  // The target lowering passes rewrote this program for (pd::Target::str(), "cpu-avx2"); empty for a
  // portable program. exec::compile refuses a lowered program on a machine that cannot run it.
  const std::string& target() const { return target_; }
  void set_target(const std::string& target) { target_ = target; }

 private:
  ValueId new_value(const std::string& name, const ValueType& type, ValueKind kind);
  std::vector<Value> values_;
  std::vector<Operation> ops_;
  std::vector<ValueId> inputs_, outputs_;
  std::vector<std::string> output_names_;
  std::map<std::string, Tensor> params_;
  std::map<std::string, ValueId> by_name_;
  int64_t next_auto_name_ = 0;  // op results are named "0", "1", ... skipping names in use
  std::string target_;
};

// Checks types against the op schemas and shape rules, dangling and undefined values, use before
// definition (cycles), duplicate names, params without tensors. Throws pd::Error with the first problem.
void verify(const Program& p);

// Text form: prints and parses back to an identical program (params are referenced by name, their
// tensors are not part of the text). Example:
//   program {
//     input %image: f32[-1, 1, 28, 28]
//     param %fc.weight: f32[10, 784]
//     %0: f32[-1, 784] = flatten(%image) {start_axis: 1, stop_axis: -1}
//     %1: f32[-1, 10] = linear(%0, %fc.weight, none)
//     output %1 as "logits"
//   }
std::string print(const Program& p);
Program parse(const std::string& text, const std::map<std::string, Tensor>& params = {});

}  // namespace pd::ir
