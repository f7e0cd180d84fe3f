// PaddlePaddle 3.x PIR program (.json, as paddle.jit.save writes it) -> PaddleGraph. The JSON form is
// compact: "#" names an op ("1.conv2d": dialect 1, op conv2d; "p": a parameter), "I"/"O" list input and
// output values by number ("%"), "A" holds attributes as {"N": name, "AT": {"#": kind, "D": data}},
// and "TT" a value's type ({"#": "0.t_dtensor", "D": [{"#": "0.t_f32"}, dims, layout, lod, offset]}).
// Constants made in the program (full, full_int_array) become PaddleGraph constants, or attributes of
// the op that reads them where ProgramDesc had an attribute (a reshape's shape, a pool's kernel size).
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "op_api.h"
#include "paddle_graph.h"
#include "pd/io/tensor_file.h"

namespace pd::io::paddle_import {
namespace {

using nlohmann::json;

class PirReader {
 public:
  explicit PirReader(std::string path) : path_(std::move(path)) {}

  PaddleGraph read() {
    json doc;
    try {
      doc = json::parse(read_file_bytes(path_));
    } catch (const json::exception& e) {
      raise(ErrorCode::kParse, "{}: not valid JSON: {}", path_, e.what());
    }
    try {
      return read_program(doc);
    } catch (const json::exception& e) {  // a key of the wrong JSON type somewhere
      raise(ErrorCode::kParse, "{}: not a PIR program this importer understands{}: {}", path_, at_op(), e.what());
    }
  }

 private:
  std::string at_op() const { return op_index_ >= 0 ? fmt::format(" (at op #{})", op_index_) : ""; }

  [[noreturn]] void bad(const std::string& what) const { raise(ErrorCode::kParse, "{}{}: {}", path_, at_op(), what); }

  PaddleGraph read_program(const json& doc) {
    if (!doc.is_object() || !doc.contains("base_code") || !doc.contains("program")) bad("no \"base_code\"/\"program\" keys");
    const json& base = doc.at("base_code");
    if (base.value("magic", std::string()) != "pir") bad("base_code.magic is not \"pir\"");
    g_.format = "PIR";
    g_.version = base.value("version", int64_t{0});
    const json& regions = doc.at("program").at("regions");
    if (!regions.is_array() || regions.size() != 1 || regions[0].at("blocks").size() != 1)
      raise(ErrorCode::kNotImplemented, "{}: the program has several regions or blocks; control flow is not supported", path_);
    const json& ops = regions[0].at("blocks")[0].at("ops");
    for (size_t i = 0; i < ops.size(); ++i) {
      op_index_ = static_cast<int64_t>(i);
      read_op(ops[i]);
    }
    op_index_ = -1;
    for (size_t i = 0; i < g_.fetches.size(); ++i)
      if (g_.fetches[i].empty()) bad(fmt::format("no fetch op for column {}", i));
    if (g_.fetches.empty()) bad("the program fetches nothing (not an inference model?)");
    std::sort(g_.params.begin(), g_.params.end());  // save_combine writes them in name order
    return std::move(g_);
  }

  // A value's name: parameters and inputs keep theirs, the rest are "%N".
  std::string name_of(int64_t id) const {
    auto it = names_.find(id);
    return it != names_.end() ? it->second : fmt::format("%{}", id);
  }

  void read_type(const std::string& name, const json& value) {
    if (!value.contains("TT")) return;
    const json& tt = value.at("TT");
    if (tt.at("#").get<std::string>() != "0.t_dtensor") return;  // vectors (combine) and others: no var
    const json& d = tt.at("D");
    PaddleVar v;
    v.dtype = dtype_of_pir_type(d.at(0).at("#").get<std::string>(), fmt::format("{}: value '{}'", path_, name));
    for (const json& e : d.at(1)) v.shape.push_back(e.get<int64_t>());
    v.has_type = true;
    g_.vars[name] = v;
  }

  static AttrValue attr_value(const json& at) {
    const std::string kind = at.at("#").get<std::string>();
    const json& d = at.at("D");
    if (kind == "0.a_i32" || kind == "0.a_i64") return d.get<int64_t>();
    if (kind == "0.a_f32" || kind == "0.a_f64") return d.get<double>();
    if (kind == "0.a_bool") return d.get<bool>();
    if (kind == "0.a_str" || kind == "1.a_dtype") return d.get<std::string>();
    if (kind == "1.a_intarray") return d.get<std::vector<int64_t>>();
    if (kind == "0.a_array") {
      std::vector<int64_t> ints;
      std::vector<double> reals;
      for (const json& e : d) {
        const std::string k = e.at("#").get<std::string>();
        if (k == "0.a_f32" || k == "0.a_f64") reals.push_back(e.at("D").get<double>());
        else if (k == "0.a_bool") ints.push_back(e.at("D").get<bool>());
        else if (k == "0.a_i32" || k == "0.a_i64") ints.push_back(e.at("D").get<int64_t>());
        else return std::string();  // arrays of strings: no converter reads them
      }
      if (!reals.empty() && ints.empty()) return reals;
      return ints;
    }
    return std::string();  // places and other kinds no converter reads
  }

  AttrMap attrs_of(const json& op, const PirOpName* row) {
    AttrMap attrs;
    if (!op.contains("A") || !op.at("A").is_array()) return attrs;
    for (const json& a : op.at("A")) {
      if (!a.is_object()) continue;
      std::string name = a.at("N").get<std::string>();
      if (row)
        for (const auto& [from, to] : row->attr_renames)
          if (name == from) name = to;
      attrs[name] = attr_value(a.at("AT"));
    }
    return attrs;
  }

  std::vector<int64_t> output_ids(const json& op) {
    std::vector<int64_t> ids;
    const json& outs = op.at("O");
    if (outs.is_object()) {  // a parameter's single output
      ids.push_back(outs.at("%").get<int64_t>());
      return ids;
    }
    for (const json& o : outs) ids.push_back(o.at("%").get<int64_t>());
    return ids;
  }

  void read_op(const json& op) {
    const std::string full = op.at("#").get<std::string>();
    if (op.contains("regions") && !op.at("regions").empty())
      raise(ErrorCode::kNotImplemented, "{}: op #{} '{}' has sub-regions; control flow is not supported", path_, op_index_, full);
    if (full == "p") return read_parameter(op);
    const size_t dot = full.find('.');
    const std::string type = dot == std::string::npos ? full : full.substr(dot + 1);
    const json& outs = op.at("O");
    const std::vector<int64_t> out_ids = output_ids(op);
    if (type == "data") {
      const AttrMap a = attrs_of(op, nullptr);
      auto it = a.find("name");
      if (it == a.end() || !std::holds_alternative<std::string>(it->second) || out_ids.size() != 1) bad("data op without a name");
      names_[out_ids[0]] = std::get<std::string>(it->second);
      read_type(names_[out_ids[0]], outs.at(0));
      g_.feeds.push_back(names_[out_ids[0]]);
      return;
    }
    std::vector<int64_t> in_ids;
    for (const json& i : op.at("I")) in_ids.push_back(i.at("%").get<int64_t>());
    if (type == "fetch") {
      const AttrMap a = attrs_of(op, nullptr);
      auto col = a.find("col");
      if (in_ids.size() != 1 || col == a.end() || !std::holds_alternative<int64_t>(col->second)) bad("fetch op without an input and a 'col'");
      const auto c = static_cast<size_t>(std::get<int64_t>(col->second));
      if (c >= 4096) bad(fmt::format("fetch column {}", c));
      if (g_.fetches.size() <= c) g_.fetches.resize(c + 1), g_.output_names.resize(c + 1);
      g_.fetches[c] = name_of(in_ids[0]);
      auto name = a.find("name");
      const bool named = name != a.end() && std::holds_alternative<std::string>(name->second);
      g_.output_names[c] = named ? std::get<std::string>(name->second) : g_.fetches[c];
      return;
    }
    if (type == "combine") {  // a list of values, read by concat and others
      if (out_ids.size() != 1) bad("combine with several outputs");
      for (int64_t id : in_ids) lists_[out_ids[0]].push_back(name_of(id));
      return;
    }
    if (type == "full" || type == "full_int_array") return read_constant(type, op, out_ids);
    if (full == "0.split") {  // builtin split: unpacks the vector an op (split, unbind) returned
      auto v = vectors_.find(in_ids.size() == 1 ? in_ids[0] : -1);
      if (v == vectors_.end()) bad("builtin split of a value that is not an op's vector result");
      std::vector<std::string>& names = g_.ops[v->second.first].outputs[v->second.second];
      names.clear();
      for (size_t k = 0; k < out_ids.size(); ++k) {
        names.push_back(name_of(out_ids[k]));
        read_type(names.back(), outs.at(k));
      }
      return;
    }

    const PirOpName* row = find_pir_op(type);
    PaddleOp p;
    p.type = row ? row->legacy : type;  // unknown types stay as named, and are reported unsupported
    p.index = op_index_;
    p.attrs = attrs_of(op, row);
    for (size_t k = 0; k < in_ids.size(); ++k) {
      if (in_ids[k] == 0) continue;  // an absent optional input
      const std::string slot = row && k < row->inputs.size() ? row->inputs[k] : fmt::format("in{}", k);
      if (slot[0] == '@') {  // a constant that ProgramDesc keeps as an attribute
        auto c = const_attrs_.find(in_ids[k]);
        if (c == const_attrs_.end())
          raise(ErrorCode::kNotImplemented, "{}: op #{} {}: its '{}' is computed at run time; only constant values "
                "(full, full_int_array) are supported there", path_, op_index_, type, slot.substr(1));
        p.attrs[slot.substr(1)] = c->second;
        continue;
      }
      auto l = lists_.find(in_ids[k]);
      if (l != lists_.end()) p.inputs[slot] = l->second;
      else p.inputs[slot] = {name_of(in_ids[k])};
    }
    for (size_t k = 0; k < out_ids.size(); ++k) {
      const std::string slot = row && k < row->outputs.size() ? row->outputs[k] : fmt::format("out{}", k);
      const std::string name = name_of(out_ids[k]);
      p.outputs[slot] = {name};
      read_type(name, outs.at(k));
      if (outs.at(k).contains("TT") && outs.at(k).at("TT").at("#") == "0.t_vec") vectors_[out_ids[k]] = {g_.ops.size(), slot};
    }
    g_.ops.push_back(std::move(p));
  }

  void read_parameter(const json& op) {
    const json& a = op.at("A");
    if (!a.is_array() || a.empty() || !a.back().is_string()) bad("parameter without a name");
    const std::string name = a.back().get<std::string>();
    const std::vector<int64_t> ids = output_ids(op);
    if (ids.size() != 1) bad(fmt::format("parameter '{}' without one output", name));
    if (g_.vars.count(name)) bad(fmt::format("parameter '{}' is declared twice", name));
    names_[ids[0]] = name;
    read_type(name, op.at("O"));
    if (!g_.vars.count(name)) raise(ErrorCode::kNotImplemented, "{}: parameter '{}' is not a dense tensor", path_, name);
    g_.params.push_back(name);
  }

  void read_constant(const std::string& type, const json& op, const std::vector<int64_t>& out_ids) {
    const AttrMap a = attrs_of(op, nullptr);
    if (out_ids.size() != 1) bad(type + " with several outputs");
    auto get = [&](const char* key) -> const AttrValue& {
      auto it = a.find(key);
      if (it == a.end()) bad(fmt::format("{} without '{}'", type, key));
      return it->second;
    };
    const std::string dtype_name = std::holds_alternative<std::string>(get("dtype")) ? std::get<std::string>(get("dtype")) : "";
    const std::string name = name_of(out_ids[0]);
    const std::string where = fmt::format("{}: {} '{}'", path_, type, name);
    const DType dt = dtype_of_pir_type(dtype_name, where);
    const bool integral = dt == DType::i32 || dt == DType::i64 || dt == DType::i8 || dt == DType::u8;
    if (type == "full_int_array") {
      if (!std::holds_alternative<std::vector<int64_t>>(get("value"))) bad(where + ": value is not a list of integers");
      const auto& v = std::get<std::vector<int64_t>>(get("value"));
      const_attrs_[out_ids[0]] = v;
      g_.constants[name] = Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
      return;
    }
    if (!std::holds_alternative<std::vector<int64_t>>(get("shape"))) bad(where + ": shape is not a list of integers");
    const Shape shape = std::get<std::vector<int64_t>>(get("shape"));
    const AttrValue& value = get("value");
    const double v = std::holds_alternative<double>(value) ? std::get<double>(value)
                     : std::holds_alternative<int64_t>(value) ? static_cast<double>(std::get<int64_t>(value))
                                                              : (bad(where + ": value is not a number"), 0.0);
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0 || d > (int64_t{1} << 24)) bad(fmt::format("{}: extent {}", where, d));
      numel *= d;
      if (numel > (int64_t{1} << 24)) bad(where + ": more than 2^24 elements");
    }
    if (numel == 1) const_attrs_[out_ids[0]] = integral ? AttrValue(static_cast<int64_t>(v)) : AttrValue(v);
    g_.constants[name] = ops::full(shape, v, dt);
  }

  std::string path_;
  PaddleGraph g_;
  int64_t op_index_ = -1;
  std::map<int64_t, std::string> names_;                 // value number -> name (params, inputs)
  std::map<int64_t, std::vector<std::string>> lists_;    // combine results
  std::map<int64_t, AttrValue> const_attrs_;             // full / full_int_array results as attributes
  std::map<int64_t, std::pair<size_t, std::string>> vectors_;  // vector results: op index in g_.ops, slot
};

}  // namespace

PaddleGraph read_pir_json(const std::string& path) { return PirReader(path).read(); }

}  // namespace pd::io::paddle_import
