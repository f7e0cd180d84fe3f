// Program construction and the rewriting primitives passes use. Checks here are only those that keep
// the data structure sound (ids in range, unique names); the full rules are verify()'s (verify.cc).
#include "pd/ir/program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "pd/ops/op_schema.h"

namespace pd::ir {

std::string ValueType::str() const { return fmt::format("{}[{}]", dtype_name(dtype), fmt::join(shape, ", ")); }

namespace {

// Attributes as the schema types them: an int written for a float attribute becomes a double, so
// that programs built by hand, parsed from text or loaded from files hold the same variants.
AttrMap normalize_attrs(const std::string& type, const AttrMap& attrs) {
  const OpSchema& s = op_schema(type);
  AttrMap out = attrs;
  for (auto& [name, v] : out)
    for (const ArgSchema& a : s.args)
      if (a.name == name && a.type == "float") {
        if (const int64_t* i = std::get_if<int64_t>(&v)) v = static_cast<double>(*i);
      } else if (a.name == name && a.type == "float[]") {
        if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) v = std::vector<double>(l->begin(), l->end());
      }
  return out;
}

}  // namespace

ValueId Program::new_value(const std::string& name, const ValueType& type, ValueKind kind) {
  PD_CHECK(!name.empty(), ErrorCode::kInvalidArgument, "program: a value needs a non-empty name");
  PD_CHECK(!by_name_.count(name), ErrorCode::kInvalidArgument, "program: the name '{}' is already taken", name);
  const auto id = static_cast<ValueId>(values_.size());
  values_.push_back(Value{name, type, kind, -1, 0});
  by_name_[name] = id;
  return id;
}

ValueId Program::add_input(const std::string& name, const ValueType& type) {
  ValueId id = new_value(name, type, ValueKind::Input);
  inputs_.push_back(id);
  return id;
}

ValueId Program::add_param(const std::string& name, const Tensor& value) {
  PD_CHECK(value.defined(), ErrorCode::kInvalidArgument, "program: param '{}' has no tensor", name);
  ValueId id = new_value(name, {value.dtype(), value.shape()}, ValueKind::Param);
  params_[name] = value;
  return id;
}

ValueId Program::declare_param(const std::string& name, const ValueType& type) {
  return new_value(name, type, ValueKind::Param);
}

std::vector<ValueId> Program::add_op(const std::string& type, const std::vector<std::vector<ValueId>>& inputs,
                                     const AttrMap& attrs) {
  return insert_op(static_cast<int32_t>(ops_.size()), type, inputs, attrs);
}

std::vector<ValueId> Program::insert_op(int32_t position, const std::string& type,
                                        const std::vector<std::vector<ValueId>>& inputs, const AttrMap& attrs) {
  MetaInputs metas;
  for (const auto& slot : inputs) {
    metas.emplace_back();
    for (ValueId v : slot) metas.back().push_back({value(v).type.dtype, value(v).type.shape});
  }
  std::vector<ValueType> types;
  for (const TensorMeta& m : infer_meta(type, metas, normalize_attrs(type, attrs))) types.push_back({m.dtype, m.shape});
  // add_op_typed appends; move the op into place afterwards so that both share one code path.
  std::vector<ValueId> results = add_op_typed(type, inputs, attrs, types);
  PD_CHECK(position >= 0 && position < static_cast<int32_t>(ops_.size()), ErrorCode::kOutOfRange,
           "program: insert position {} is outside [0, {}]", position, ops_.size() - 1);
  if (position != static_cast<int32_t>(ops_.size()) - 1) {
    std::rotate(ops_.begin() + position, ops_.end() - 1, ops_.end());
    for (int32_t i = position; i < static_cast<int32_t>(ops_.size()); ++i)
      for (ValueId r : ops_[i].results) values_[r].producer = i;
  }
  return results;
}

std::vector<ValueId> Program::add_op_typed(const std::string& type, const std::vector<std::vector<ValueId>>& inputs,
                                           const AttrMap& attrs, const std::vector<ValueType>& result_types) {
  op_schema(type);  // throws naming the unknown op
  for (const auto& slot : inputs)
    for (ValueId v : slot)
      PD_CHECK(v >= 0 && v < static_cast<ValueId>(values_.size()), ErrorCode::kInvalidArgument,
               "program: op '{}' refers to value id {}, which does not exist", type, v);
  const auto index = static_cast<int32_t>(ops_.size());
  Operation op{type, inputs, {}, normalize_attrs(type, attrs)};
  for (size_t i = 0; i < result_types.size(); ++i) {
    std::string name;
    do name = std::to_string(next_auto_name_++);
    while (by_name_.count(name));
    ValueId r = new_value(name, result_types[i], ValueKind::OpResult);
    values_[r].producer = index;
    values_[r].result_index = static_cast<int32_t>(i);
    op.results.push_back(r);
  }
  ops_.push_back(std::move(op));
  return ops_.back().results;
}

void Program::mark_output(ValueId v, const std::string& name) {
  value(v);
  PD_CHECK(std::find(output_names_.begin(), output_names_.end(), name) == output_names_.end(),
           ErrorCode::kInvalidArgument, "program: output name '{}' is already taken", name);
  outputs_.push_back(v);
  output_names_.push_back(name);
}

const Value& Program::value(ValueId id) const {
  PD_CHECK(id >= 0 && id < static_cast<ValueId>(values_.size()), ErrorCode::kOutOfRange,
           "program: value id {} is outside [0, {})", id, values_.size());
  return values_[id];
}

ValueId Program::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? kNoValue : it->second;
}

void Program::rename(ValueId v, const std::string& name) {
  value(v);
  Value& val = values_[v];
  if (val.name == name) return;
  PD_CHECK(!name.empty() && !by_name_.count(name), ErrorCode::kInvalidArgument,
           "program: cannot rename '{}' to '{}': the name is empty or taken", val.name, name);
  if (val.kind == ValueKind::Param && params_.count(val.name)) {
    params_[name] = params_[val.name];
    params_.erase(val.name);
  }
  by_name_.erase(val.name);
  by_name_[name] = v;
  val.name = name;
}

std::string Program::unique_name(const std::string& base) const {
  if (!by_name_.count(base)) return base;
  for (int i = 1;; ++i)
    if (std::string n = fmt::format("{}.{}", base, i); !by_name_.count(n)) return n;
}

const Tensor& Program::param(ValueId id) const {
  const Value& v = value(id);
  auto it = params_.find(v.name);
  PD_CHECK(v.kind == ValueKind::Param && it != params_.end(), ErrorCode::kInvalidArgument,
           "program: value '{}' is not a param with a tensor", v.name);
  return it->second;
}

void Program::set_param(ValueId id, const Tensor& t) {
  const Value& v = value(id);
  PD_CHECK(v.kind == ValueKind::Param, ErrorCode::kInvalidArgument, "program: value '{}' is not a param", v.name);
  ValueType got{t.dtype(), t.shape()};
  PD_CHECK(t.defined() && got == v.type, ErrorCode::kInvalidArgument, "program: param '{}' is {}, but the tensor is {}",
           v.name, v.type.str(), t.defined() ? got.str() : "undefined");
  params_[v.name] = t;
}

void Program::replace_uses(ValueId from, ValueId to) {
  value(from), value(to);
  for (Operation& op : ops_)
    for (auto& slot : op.inputs) std::replace(slot.begin(), slot.end(), from, to);
  std::replace(outputs_.begin(), outputs_.end(), from, to);
}

void Program::set_input(int32_t op, size_t slot, ValueId v) {
  value(v);
  PD_CHECK(op >= 0 && op < static_cast<int32_t>(ops_.size()) && slot < ops_[op].inputs.size() && ops_[op].inputs[slot].size() == 1,
           ErrorCode::kOutOfRange, "program: op #{} has no one-value input slot {}", op, slot);
  ops_[op].inputs[slot][0] = v;
}

void Program::remove_ops(const std::vector<int32_t>& op_indices) {
  std::set<int32_t> doomed(op_indices.begin(), op_indices.end());
  std::vector<Operation> kept;
  for (int32_t i = 0; i < static_cast<int32_t>(ops_.size()); ++i) {
    if (doomed.count(i)) {
      for (ValueId r : ops_[i].results) values_[r].producer = -1;  // orphaned until compact()
      continue;
    }
    for (ValueId r : ops_[i].results) values_[r].producer = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(ops_[i]));
  }
  ops_ = std::move(kept);
}

void Program::compact() {
  // Canonical order (inputs, params, op results in op order) so that print/parse gives the same ids.
  std::vector<bool> used(values_.size(), false);
  for (const Operation& op : ops_)
    for (const auto& slot : op.inputs)
      for (ValueId v : slot) used[v] = true;
  for (ValueId v : outputs_) used[v] = true;
  std::vector<ValueId> order(inputs_.begin(), inputs_.end());
  for (ValueId v = 0; v < static_cast<ValueId>(values_.size()); ++v)
    if (values_[v].kind == ValueKind::Param && used[v]) order.push_back(v);
  for (const Operation& op : ops_) order.insert(order.end(), op.results.begin(), op.results.end());
  // A used orphan is a dangling reference: keep it so that verify() can name it.
  for (ValueId v = 0; v < static_cast<ValueId>(values_.size()); ++v)
    if (values_[v].kind == ValueKind::OpResult && values_[v].producer < 0 && used[v]) order.push_back(v);

  std::vector<ValueId> remap(values_.size(), kNoValue);
  std::vector<Value> values;
  std::map<std::string, Tensor> params;
  by_name_.clear();
  for (ValueId old : order) {
    remap[old] = static_cast<ValueId>(values.size());
    by_name_[values_[old].name] = remap[old];
    if (values_[old].kind == ValueKind::Param && params_.count(values_[old].name))
      params[values_[old].name] = params_[values_[old].name];
    values.push_back(values_[old]);
  }
  for (Operation& op : ops_) {
    for (auto& slot : op.inputs)
      for (ValueId& v : slot) v = remap[v];
    for (ValueId& r : op.results) r = remap[r];
  }
  for (ValueId& v : inputs_) v = remap[v];
  for (ValueId& v : outputs_) v = remap[v];
  values_ = std::move(values);
  params_ = std::move(params);
}

std::vector<int32_t> Program::users(ValueId v) const {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < static_cast<int32_t>(ops_.size()); ++i)
    for (const auto& slot : ops_[i].inputs)
      if (std::find(slot.begin(), slot.end(), v) != slot.end()) {
        out.push_back(i);
        break;
      }
  return out;
}

bool Program::is_output(ValueId v) const { return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end(); }

}  // namespace pd::ir
