// verify(): every rule a Program must keep, checked in one pass over the ops in order, so that a
// use before definition (which is how a cycle shows in an op list) is found where it happens.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "pd/ir/program.h"
#include "pd/ops/op_schema.h"

namespace pd::ir {
namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorCode::kInvalidArgument, "verify: " + msg); }

bool attr_has_type(const AttrValue& v, const std::string& type) {
  if (type == "int") return std::holds_alternative<int64_t>(v);
  if (type == "float") return std::holds_alternative<double>(v);
  if (type == "bool") return std::holds_alternative<bool>(v);
  if (type == "int[]") return std::holds_alternative<std::vector<int64_t>>(v);
  if (type == "float[]") return std::holds_alternative<std::vector<double>>(v);
  if (type == "str") return std::holds_alternative<std::string>(v);
  if (type == "dtype") return std::holds_alternative<DType>(v);
  return false;
}

// Declared result types must be what the shape rules give, except where the rules only know -1.
bool type_fits(const ValueType& declared, const TensorMeta& inferred) {
  if (declared.dtype != inferred.dtype || declared.shape.size() != inferred.shape.size()) return false;
  for (size_t i = 0; i < declared.shape.size(); ++i)
    if (inferred.shape[i] != -1 && declared.shape[i] != inferred.shape[i]) return false;
  return true;
}

void check_values(const Program& p) {
  std::set<std::string> names;
  for (ValueId id = 0; id < static_cast<ValueId>(p.values().size()); ++id) {
    const Value& v = p.value(id);
    if (v.name.empty()) fail(fmt::format("value #{} has no name", id));
    if (!names.insert(v.name).second) fail(fmt::format("two values are named '%{}'", v.name));
    for (int64_t d : v.type.shape)
      if (d < -1) fail(fmt::format("value %{} has the invalid shape {}", v.name, v.type.str()));
    if (v.kind == ValueKind::Param) {
      auto it = p.params().find(v.name);
      if (it == p.params().end()) fail(fmt::format("param %{} has no tensor", v.name));
      ValueType got{it->second.dtype(), it->second.shape()};
      if (got != v.type) fail(fmt::format("param %{} is declared {} but its tensor is {}", v.name, v.type.str(), got.str()));
    } else if (v.kind == ValueKind::Input) {
      if (std::find(p.inputs().begin(), p.inputs().end(), id) == p.inputs().end())
        fail(fmt::format("value %{} is an input but not in the program's input list", v.name));
    } else if (v.producer < 0 || v.producer >= static_cast<int32_t>(p.ops().size()) ||
               static_cast<size_t>(v.result_index) >= p.ops()[v.producer].results.size() ||
               p.ops()[v.producer].results[v.result_index] != id) {
      fail(fmt::format("value %{} is an op result that no op produces (dangling)", v.name));
    }
  }
  for (const auto& [name, t] : p.params())
    if (ValueId id = p.find(name); id == kNoValue || p.value(id).kind != ValueKind::Param)
      fail(fmt::format("a param tensor is stored under '{}', which is not a param of the graph", name));
}

void check_attrs(const Operation& op, const OpSchema& s, const std::string& where) {
  for (const auto& [name, v] : op.attrs) {
    const ArgSchema* arg = nullptr;
    for (const ArgSchema& a : s.args)
      if (a.name == name && !a.is_tensor()) arg = &a;
    if (!arg) fail(fmt::format("{}: unknown attribute '{}'", where, name));
    if (!attr_has_type(v, arg->type))
      fail(fmt::format("{}: attribute '{}' must be {}, but holds {}", where, name, arg->type, attr_str(v)));
  }
  for (const ArgSchema& a : s.args)
    if (!a.is_tensor() && !a.has_default && !op.attrs.count(a.name))
      fail(fmt::format("{}: missing required attribute '{}'", where, a.name));
}

void check_op(const Program& p, int32_t index, const std::vector<bool>& defined) {
  const Operation& op = p.ops()[index];
  const std::string where = fmt::format("op #{} ({})", index, op.type);
  const OpSchema* s = nullptr;
  try {
    s = &op_schema(op.type);
  } catch (const Error& e) {
    fail(fmt::format("{}: {}", where, e.what()));
  }
  std::vector<const ArgSchema*> tensors;
  for (const ArgSchema& a : s->args)
    if (a.is_tensor()) tensors.push_back(&a);
  if (op.inputs.size() != tensors.size())
    fail(fmt::format("{}: has {} input slots, but the op takes {} tensor inputs", where, op.inputs.size(), tensors.size()));
  MetaInputs metas;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& slot = op.inputs[i];
    const std::string& t = tensors[i]->type;
    if (t == "Tensor" && slot.size() != 1)
      fail(fmt::format("{}: input '{}' needs one value, but has {}", where, tensors[i]->name, slot.size()));
    if (t == "Tensor?" && slot.size() > 1)
      fail(fmt::format("{}: optional input '{}' has {} values", where, tensors[i]->name, slot.size()));
    metas.emplace_back();
    for (ValueId v : slot) {
      if (v < 0 || v >= static_cast<ValueId>(p.values().size()))
        fail(fmt::format("{}: input '{}' refers to value id {}, which does not exist", where, tensors[i]->name, v));
      if (!defined[v])
        fail(fmt::format("{}: input '{}' uses %{} before it is defined (undefined value or a cycle)", where,
                         tensors[i]->name, p.value(v).name));
      metas.back().push_back({p.value(v).type.dtype, p.value(v).type.shape});
    }
  }
  check_attrs(op, *s, where);
  std::vector<TensorMeta> want;
  try {
    want = infer_meta(op.type, metas, op.attrs);
  } catch (const Error& e) {
    fail(fmt::format("{}: inputs do not fit the op: {}", where, e.what()));
  }
  if (want.size() != op.results.size())
    fail(fmt::format("{}: has {} results, but the op gives {}", where, op.results.size(), want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    const Value& r = p.value(op.results[i]);
    if (!type_fits(r.type, want[i]))
      fail(fmt::format("{}: result %{} is declared {}, but the op gives {}", where, r.name, r.type.str(),
                       ValueType{want[i].dtype, want[i].shape}.str()));
  }
}

}  // namespace

void verify(const Program& p) {
  check_values(p);
  std::vector<bool> defined(p.values().size(), false);
  for (ValueId v = 0; v < static_cast<ValueId>(p.values().size()); ++v)
    defined[v] = p.value(v).kind != ValueKind::OpResult;
  for (int32_t i = 0; i < static_cast<int32_t>(p.ops().size()); ++i) {
    check_op(p, i, defined);
    for (ValueId r : p.ops()[i].results) {
      if (defined[r]) fail(fmt::format("op #{} ({}): result %{} is defined twice", i, p.ops()[i].type, p.value(r).name));
      defined[r] = true;
    }
  }
  if (p.outputs().size() != p.output_names().size()) fail("the output list and the output names differ in length");
  std::set<std::string> names;
  for (size_t i = 0; i < p.outputs().size(); ++i) {
    ValueId v = p.outputs()[i];
    if (v < 0 || v >= static_cast<ValueId>(p.values().size()) || !defined[v])
      fail(fmt::format("output '{}' refers to a value that is not defined", p.output_names()[i]));
    if (p.output_names()[i].empty() || !names.insert(p.output_names()[i]).second)
      fail(fmt::format("output name '{}' is empty or used twice", p.output_names()[i]));
  }
  if (p.outputs().empty()) fail("the program has no outputs");
}

}  // namespace pd::ir
