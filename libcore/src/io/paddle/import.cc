// PaddlePaddle program -> Program. The reader of the file's format gives a PaddleGraph; every op type is
// looked up before any work, so that an unsupported model is refused with its whole gap; the params file
// is read and checked against the program; then ops convert in order through import_ops.cc, each result
// checked against the type Paddle declared for it; dead ops (conv and linear results whose bias add was
// taken in) are swept at the end.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "import_context.h"
#include "pd/io/model_format.h"
#include "pd/io/paddle.h"
#include "pd/ir/pass.h"

namespace pd::io {
namespace paddle_import {

class Importer {
 public:
  Importer(PaddleGraph& g, std::map<std::string, Tensor> params, const PaddleImportOptions& options)
      : g_(g), tensors_(std::move(params)), options_(options) {
    for (auto& [name, t] : g_.constants) tensors_[name] = t;
    for (const PaddleOp& op : g_.ops)
      for (const auto& [slot, names] : op.inputs)
        for (const std::string& n : names) ++readers_[n];
    for (const std::string& n : g_.fetches) ++readers_[n];
    for (const PaddleOp& op : g_.ops)
      for (const auto& [slot, names] : op.outputs)
        for (const std::string& n : names) producers_[n] = &op;
  }

  ir::Program run(PaddleImportReport& report) {
    for (const std::string& name : g_.feeds) add_input(name);
    for (const PaddleOp& op : g_.ops) {
      const Converter* fn = find_converter(op.type);
      PD_CHECK(fn, ErrorCode::kInternal, "no converter for {}", op.type);  // refused before, in check_supported
      OpContext ctx(*this, op);
      (*fn)(ctx);
      check_declared(op);
    }
    for (size_t i = 0; i < g_.fetches.size(); ++i) {
      const std::string& name = g_.fetches[i];
      auto it = values_.find(name);
      PD_CHECK(it != values_.end(), ErrorCode::kParse, "fetched variable '{}' is not computed by any op", name);
      program_.mark_output(it->second, g_.output_names[i]);
    }
    ir::PassStats stats;
    ir::make_pass("dce")->run(program_, stats);
    ir::verify(program_);
    report.folded = folded_;
    report.fused = fused_;
    return std::move(program_);
  }

  ir::Program& program() { return program_; }
  const PaddleGraph& graph() const { return g_; }
  int64_t& folded() { return folded_; }
  int64_t& fused() { return fused_; }
  bool shapes_overridden() const { return !options_.input_shapes.empty(); }

  ir::ValueId value(const std::string& name, const OpContext& c) {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    if (auto s = shape_values_.find(name); s != shape_values_.end())
      c.unsupported(fmt::format("reads '{}', the shape {} with extents known only at run time; give --input-shape "
                                "NAME=DIMS to fix them", name, s->second.extents));
    auto t = tensors_.find(name);
    if (t == tensors_.end()) c.fail(fmt::format("reads '{}', which no earlier op computes", name));
    return values_[name] = program_.add_param(program_.unique_name(name), t->second);
  }
  const Tensor* constant(const std::string& name) {
    auto it = values_.find(name);
    if (it != values_.end())
      return program_.value(it->second).kind == ir::ValueKind::Param ? &program_.param(it->second) : nullptr;
    auto t = tensors_.find(name);
    return t == tensors_.end() ? nullptr : &t->second;
  }
  int64_t readers(const std::string& name) const {
    auto it = readers_.find(name);
    return it == readers_.end() ? 0 : it->second;
  }
  std::string origin(std::string var) const {
    for (int hops = 0; hops < 8; ++hops) {
      if (std::find(g_.params.begin(), g_.params.end(), var) != g_.params.end()) return var;
      auto p = producers_.find(var);
      if (p == producers_.end()) return "";
      const PaddleOp& op = *p->second;
      static const std::set<std::string> kViews = {"reshape2", "unsqueeze2", "squeeze2", "assign"};
      auto x = op.inputs.find("X");
      if (!kViews.count(op.type) || x == op.inputs.end() || x->second.size() != 1) return "";
      var = x->second[0];
    }
    return "";
  }
  void bind(const std::string& name, ir::ValueId v, const OpContext& c) {
    if (values_.count(name) || shape_values_.count(name))
      c.fail(fmt::format("writes '{}' a second time (programs in SSA form only)", name));
    values_[name] = v;
  }
  void bind_shape(const std::string& name, const ShapeValue& s, const OpContext& c) {
    if (values_.count(name) || shape_values_.count(name))
      c.fail(fmt::format("writes '{}' a second time (programs in SSA form only)", name));
    shape_values_[name] = s;
  }
  const ShapeValue* shape_value(const std::string& name) const {
    auto it = shape_values_.find(name);
    return it == shape_values_.end() ? nullptr : &it->second;
  }

 private:
  void add_input(const std::string& name) {
    auto it = g_.vars.find(name);
    PD_CHECK(it != g_.vars.end() && it->second.has_type, ErrorCode::kParse, "input '{}' has no declared type", name);
    ir::ValueType t{it->second.dtype, it->second.shape};
    auto o = options_.input_shapes.find(name);
    if (o != options_.input_shapes.end()) {
      PD_CHECK(o->second.size() == t.shape.size(), ErrorCode::kInvalidArgument, "--input-shape {}: {} extents given, the "
               "input has rank {} ({})", name, o->second.size(), t.shape.size(), t.str());
      for (size_t d = 0; d < t.shape.size(); ++d)
        PD_CHECK(t.shape[d] < 0 || t.shape[d] == o->second[d], ErrorCode::kInvalidArgument, "--input-shape {}: extent {} "
                 "is fixed at {} by the model", name, d, t.shape[d]);
      t.shape = o->second;
    }
    values_[name] = program_.add_input(name, t);
  }

  // Our result types must agree with what Paddle inferred wherever both know an extent: a converter that
  // got an attribute wrong fails here, naming the op, instead of computing something else.
  void check_declared(const PaddleOp& op) {
    for (const auto& [slot, names] : op.outputs) {
      for (const std::string& n : names) {
        auto v = values_.find(n);
        auto d = g_.vars.find(n);
        if (v == values_.end() || d == g_.vars.end() || !d->second.has_type) continue;
        const ir::ValueType& ours = program_.value(v->second).type;
        bool ok = ours.shape.size() == d->second.shape.size() && ours.dtype == d->second.dtype;
        for (size_t k = 0; ok && k < ours.shape.size(); ++k)
          ok = ours.shape[k] < 0 || d->second.shape[k] < 0 || shapes_overridden() || ours.shape[k] == d->second.shape[k];
        PD_CHECK(ok, ErrorCode::kInternal, "{}: converted to {} but the program declares {}{} for '{}'", op.where(),
                 ours.str(), dtype_name(d->second.dtype), d->second.shape, n);
      }
    }
  }

  PaddleGraph& g_;
  std::map<std::string, Tensor> tensors_;  // params and program constants, entering the program when read
  const PaddleImportOptions& options_;
  ir::Program program_;
  std::map<std::string, ir::ValueId> values_;
  std::map<std::string, ShapeValue> shape_values_;  // shapes with run-time extents (ShapeValue)
  std::map<std::string, int64_t> readers_;
  std::map<std::string, const PaddleOp*> producers_;
  int64_t folded_ = 0, fused_ = 0;
};

// ---- OpContext ------------------------------------------------------------------------------------

void OpContext::fail(const std::string& what) const { raise(ErrorCode::kInvalidArgument, "{}: {}", where(), what); }
void OpContext::unsupported(const std::string& what) const { raise(ErrorCode::kNotImplemented, "{}: {}", where(), what); }

bool OpContext::has(const std::string& slot) const {
  auto it = op_.inputs.find(slot);
  return it != op_.inputs.end() && !it->second.empty();
}

const std::string& OpContext::in_name(const std::string& slot) const {
  auto it = op_.inputs.find(slot);
  if (it == op_.inputs.end() || it->second.size() != 1)
    fail(fmt::format("input '{}' must be one variable, got {}", slot, it == op_.inputs.end() ? 0 : it->second.size()));
  return it->second[0];
}

std::vector<ir::ValueId> OpContext::ins(const std::string& slot) const {
  std::vector<ir::ValueId> out;
  auto it = op_.inputs.find(slot);
  if (it != op_.inputs.end())
    for (const std::string& n : it->second) out.push_back(value(n));
  return out;
}

ir::ValueId OpContext::value(const std::string& var) const { return im_.value(var, *this); }
const ir::ValueType& OpContext::type(ir::ValueId v) const { return im_.program().value(v).type; }
const Tensor* OpContext::constant(const std::string& var) const { return im_.constant(var); }
int64_t OpContext::readers(const std::string& var) const { return im_.readers(var); }
const ShapeValue* OpContext::shape_value(const std::string& var) const { return im_.shape_value(var); }
std::string OpContext::origin(const std::string& var) const { return im_.origin(var); }
ir::Program& OpContext::program() const { return im_.program(); }

const AttrValue* OpContext::attr(const std::string& name) const {
  auto it = op_.attrs.find(name);
  return it == op_.attrs.end() ? nullptr : &it->second;
}

int64_t OpContext::attr_int(const std::string& name, int64_t def) const {
  const AttrValue* a = attr(name);
  if (!a) return def;
  if (auto* i = std::get_if<int64_t>(a)) return *i;
  if (auto* b = std::get_if<bool>(a)) return *b;
  if (auto* v = std::get_if<std::vector<int64_t>>(a); v && v->size() == 1) return (*v)[0];
  fail(fmt::format("attribute '{}' is {}, expected an integer", name, attr_str(*a)));
}

double OpContext::attr_float(const std::string& name, double def) const {
  const AttrValue* a = attr(name);
  if (!a) return def;
  if (auto* d = std::get_if<double>(a)) return *d;
  if (auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
  fail(fmt::format("attribute '{}' is {}, expected a number", name, attr_str(*a)));
}

std::vector<double> OpContext::attr_floats(const std::string& name) const {
  const AttrValue* a = attr(name);
  if (!a) return {};
  if (auto* v = std::get_if<std::vector<double>>(a)) return *v;
  if (auto* v = std::get_if<std::vector<int64_t>>(a)) return std::vector<double>(v->begin(), v->end());
  if (auto* d = std::get_if<double>(a)) return {*d};
  if (auto* i = std::get_if<int64_t>(a)) return {static_cast<double>(*i)};
  fail(fmt::format("attribute '{}' is {}, expected a list of numbers", name, attr_str(*a)));
}

std::vector<int64_t> OpContext::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const AttrValue* a = attr(name);
  if (!a) return def;
  if (auto* v = std::get_if<std::vector<int64_t>>(a)) return *v;
  if (auto* i = std::get_if<int64_t>(a)) return {*i};
  fail(fmt::format("attribute '{}' is {}, expected a list of integers", name, attr_str(*a)));
}

std::string OpContext::attr_string(const std::string& name, const std::string& def) const {
  const AttrValue* a = attr(name);
  if (!a) return def;
  if (auto* s = std::get_if<std::string>(a)) return *s;
  fail(fmt::format("attribute '{}' is {}, expected a string", name, attr_str(*a)));
}

const PaddleVar* OpContext::declared(const std::string& slot) const {
  auto it = op_.outputs.find(slot);
  if (it == op_.outputs.end() || it->second.size() != 1) return nullptr;
  auto v = im_.graph().vars.find(it->second[0]);
  return v != im_.graph().vars.end() && v->second.has_type ? &v->second : nullptr;
}

std::vector<ir::ValueId> OpContext::ops(const std::string& type, const std::vector<std::vector<ir::ValueId>>& inputs,
                                        const AttrMap& attrs) {
  ir::Program& p = im_.program();
  std::vector<ir::ValueId> results;
  try {
    results = p.add_op(type, inputs, attrs);
  } catch (const Error& e) {
    fail(fmt::format("as {}: {}", type, e.what()));
  }
  const auto idx = static_cast<int32_t>(p.ops().size() - 1);
  if (ir::foldable(p, idx)) {
    ++im_.folded();
    return ir::fold_op(p, idx);
  }
  return results;
}

ir::ValueId OpContext::param(const Tensor& t, const std::string& name) {
  ir::Program& p = im_.program();
  return p.add_param(p.unique_name(name), t);
}

ir::ValueId OpContext::scalar(double v, DType dtype) {
  auto it = op_.outputs.begin();
  const bool named = it != op_.outputs.end() && !it->second.empty();
  return param(Tensor::full_scalar(v, dtype), (named ? it->second[0] : op_.type) + ".const");
}

void OpContext::outs(const std::string& slot, const std::vector<ir::ValueId>& vs) {
  auto it = op_.outputs.find(slot);
  if (it == op_.outputs.end() || it->second.size() != vs.size())
    fail(fmt::format("output '{}' has {} variables for {} results", slot, it == op_.outputs.end() ? 0 : it->second.size(), vs.size()));
  for (size_t k = 0; k < vs.size(); ++k) im_.bind(it->second[k], vs[k], *this);
}

void OpContext::count_fused() { ++im_.fused(); }

void OpContext::out_shape(const std::string& slot, const ShapeValue& s) {
  auto it = op_.outputs.find(slot);
  if (it == op_.outputs.end() || it->second.size() != 1) fail(fmt::format("output '{}' must be one variable", slot));
  if (std::any_of(s.extents.begin(), s.extents.end(), [](int64_t e) { return e < 0; }))
    return im_.bind_shape(it->second[0], s, *this);
  const Shape dims = s.scalar ? Shape{} : Shape{static_cast<int64_t>(s.extents.size())};
  ir::ValueId v = param(Tensor::from_vector<int64_t>(s.extents, dims), it->second[0]);
  if (s.dtype != DType::i64) v = op("cast", {{v}}, {{"dtype", s.dtype}});
  out(slot, v);
}

void OpContext::out(const std::string& slot, ir::ValueId v) {
  auto it = op_.outputs.find(slot);
  if (it == op_.outputs.end() || it->second.size() != 1) fail(fmt::format("output '{}' must be one variable", slot));
  im_.bind(it->second[0], v, *this);
}

// Every op type the program uses, checked before any conversion.
void check_supported(const PaddleGraph& g, const std::string& path) {
  std::map<std::string, std::vector<std::string>> missing;
  for (const PaddleOp& op : g.ops)
    if (!find_converter(op.type)) missing[op.type].push_back(op.where());
  if (missing.empty()) return;
  std::vector<std::string> lines;
  for (const auto& [type, where] : missing) {
    std::vector<std::string> first(where.begin(), where.begin() + std::min<size_t>(3, where.size()));
    lines.push_back(fmt::format("  {} x{} (first: {})", type, where.size(), fmt::join(first, "; ")));
  }
  raise(ErrorCode::kNotImplemented, "{}: {} op type{} this toolchain cannot map yet:\n{}\nsupported (ProgramDesc names; PIR's map onto them, "
        "docs/pd-convert.md): {}", path,
        missing.size(), missing.size() == 1 ? "" : "s", fmt::join(lines, "\n"), fmt::join(supported_paddle_ops(), ", "));
}

}  // namespace paddle_import

std::string paddle_params_path(const std::string& model_path) {
  return std::filesystem::path(model_path).replace_extension(".pdiparams").string();
}

ir::Program import_paddle(const std::string& path, const PaddleImportOptions& options, PaddleImportReport* report) {
  using namespace paddle_import;
  const ModelFormat format = detect_model_format(path);
  PD_CHECK(format == ModelFormat::PaddleProgramDesc || format == ModelFormat::PaddlePir, ErrorCode::kInvalidArgument,
           "{}: not a PaddlePaddle program (found {})", path, model_format_name(format));
  PaddleGraph g = format == ModelFormat::PaddlePir ? read_pir_json(path) : read_program_desc(path);
  check_supported(g, path);
  for (const auto& [name, shape] : options.input_shapes)
    PD_CHECK(std::find(g.feeds.begin(), g.feeds.end(), name) != g.feeds.end(), ErrorCode::kInvalidArgument,
             "--input-shape {}: the program has no input '{}' (inputs: {})", name, name, fmt::join(g.feeds, ", "));
  const std::string params_path = options.params_path.empty() ? paddle_params_path(path) : options.params_path;
  std::map<std::string, Tensor> params;
  if (!g.params.empty()) {
    PD_CHECK(std::filesystem::exists(params_path), ErrorCode::kIO, "{}: the program has {} parameters, and their file "
             "{} does not exist (give it with --params)", path, g.params.size(), params_path);
    params = read_params(params_path, g);
  }
  PaddleImportReport local;
  PaddleImportReport& r = report ? *report : local;
  r.format = g.format;
  r.version = g.version;
  r.ops = static_cast<int64_t>(g.ops.size());
  r.params_path = g.params.empty() ? "" : params_path;
  for (const PaddleOp& op : g.ops) ++r.op_types[op.type];
  Importer im(g, std::move(params), options);
  return im.run(r);
}

}  // namespace pd::io
