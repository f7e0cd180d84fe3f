#include "pd/model/layers.h"

#include <fmt/ranges.h>

#include <cmath>
#include <map>

#include "elementwise_ops.h"
#include "layer_types.h"
#include "pd/model/sync_batch_norm.h"
#include "op_api.h"
#include "pd/ops/op_schema.h"

namespace pd::model {
namespace {

double fan_in_bound(int64_t fan_in) { return fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0; }

class Linear : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    if (in[0].size() < 2) fail("input", fmt::format("linear needs an input of at least [N, features], got {}", shape_str(in[0])));
    int64_t fan_in = in[0].back(), out = get_int("out_features");
    if (out <= 0) fail("out_features", fmt::format("must be positive, got {}", out));
    weight_ = add_param(pf, "weight", {out, fan_in}, fan_in_bound(fan_in));
    if (get_bool("bias", true)) bias_ = add_param(pf, "bias", {out}, fan_in_bound(fan_in));
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override { return ops::linear(in[0], weight_, bias_); }

 private:
  Tensor weight_, bias_;
};

class Conv2d : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    if (in[0].size() != 4) fail("input", fmt::format("conv2d needs a [N, C, H, W] input, got {}", shape_str(in[0])));
    int64_t out = get_int("out_channels"), groups = get_int("groups", 1);
    std::vector<int64_t> k = get_pair("kernel_size", {});
    if (out <= 0 || groups <= 0 || in[0][1] % groups != 0 || out % groups != 0)
      fail("groups", fmt::format("groups {} must divide the input channels {} and out_channels {}", groups, in[0][1], out));
    int64_t fan_in = in[0][1] / groups * k[0] * k[1];
    weight_ = add_param(pf, "weight", {out, in[0][1] / groups, k[0], k[1]}, fan_in_bound(fan_in));
    if (get_bool("bias", true)) bias_ = add_param(pf, "bias", {out}, fan_in_bound(fan_in));
    stride_ = get_pair("stride", {1, 1});
    padding_ = get_pair("padding", {0, 0});
    dilation_ = get_pair("dilation", {1, 1});
    groups_ = groups;
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx& ctx) override {
    return ops::conv2d(in[0], weight_, bias_, stride_, padding_, dilation_, groups_, ctx.channels_last);
  }
  bool runs_channels_last() const override { return true; }

 private:
  Tensor weight_, bias_;
  std::vector<int64_t> stride_, padding_, dilation_;
  int64_t groups_ = 1;
};

class Pool2d : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override {
    expect_inputs(in, 1);
    kernel_ = get_pair("kernel_size", {});
    stride_ = get_pair("stride", kernel_);
    padding_ = get_pair("padding", {0, 0});
    ceil_ = get_bool("ceil_mode", false);
    exclusive_ = get_bool("exclusive", true);
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    if (spec_.type == "max_pool2d") return ops::max_pool2d(in[0], kernel_, stride_, padding_, ceil_);
    return ops::avg_pool2d(in[0], kernel_, stride_, padding_, ceil_, exclusive_);
  }

 private:
  std::vector<int64_t> kernel_, stride_, padding_;
  bool ceil_ = false, exclusive_ = true;
};

class AdaptiveAvgPool2d : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override { size_ = get_pair("output_size", {1, 1}); }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override { return ops::adaptive_avg_pool2d(in[0], size_); }

 private:
  std::vector<int64_t> size_;
};

class BatchNorm : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    if (in[0].size() < 2) fail("input", fmt::format("batch_norm needs an input of at least [N, C], got {}", shape_str(in[0])));
    Shape c = {in[0][1]};
    scale_ = pf.constant(spec_.name + ".weight", c, 1.0);
    bias_ = pf.constant(spec_.name + ".bias", c, 0.0);
    mean_ = pf.constant(spec_.name + ".running_mean", c, 0.0, false);
    var_ = pf.constant(spec_.name + ".running_var", c, 1.0, false);
    param_count_ = 2 * c[0];
    momentum_ = get_float("momentum", 0.9);
    eps_ = get_float("epsilon", 1e-5);
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx& ctx) override {
    if (ctx.training && ctx.cross_rank_sum)
      return sync_batch_norm(in[0], scale_, bias_, mean_, var_, momentum_, eps_, *ctx.cross_rank_sum, spec_.name);
    return std::get<0>(ops::batch_norm(in[0], scale_, bias_, mean_, var_, momentum_, eps_, ctx.training, false, ctx.channels_last));
  }
  Tensor forward_relu(const std::vector<Tensor>& in, const ForwardCtx& ctx) override {
    if (ctx.training && ctx.cross_rank_sum) return Tensor();  // sync_batch_norm has no fused form
    return std::get<0>(
        ops::batch_norm(in[0], scale_, bias_, mean_, var_, momentum_, eps_, ctx.training, /*fuse_relu=*/true, ctx.channels_last));
  }
  Tensor forward_add_relu(const std::vector<Tensor>& in, const Tensor& residual, const ForwardCtx& ctx) override {
    if ((ctx.training && ctx.cross_rank_sum) || !in[0].place().is_cpu()) return Tensor();  // no such kernel there
    return std::get<0>(ops::batch_norm_add_relu(in[0], residual, scale_, bias_, mean_, var_, momentum_, eps_, ctx.training,
                                                ctx.channels_last));
  }
  // (sync_batch_norm is NCHW only: the network does not use channels_last with a cross-rank sum)
  bool runs_channels_last() const override { return true; }

 private:
  Tensor scale_, bias_, mean_, var_;
  double momentum_ = 0.9, eps_ = 1e-5;
};

class LayerNorm : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    axis_ = get_int("begin_norm_axis", -1);
    int64_t nd = static_cast<int64_t>(in[0].size());
    int64_t b = axis_ < 0 ? axis_ + nd : axis_;
    if (b < 1 || b >= nd) fail("begin_norm_axis", fmt::format("must name an axis after the batch axis of {}, got {}", shape_str(in[0]), axis_));
    Shape s(in[0].begin() + b, in[0].end());
    scale_ = pf.constant(spec_.name + ".weight", s, 1.0);
    bias_ = pf.constant(spec_.name + ".bias", s, 0.0);
    param_count_ = 2 * shape_numel(s);
    eps_ = get_float("epsilon", 1e-5);
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    return std::get<0>(ops::layer_norm(in[0], scale_, bias_, axis_, eps_));
  }

 private:
  Tensor scale_, bias_;
  int64_t axis_ = -1;
  double eps_ = 1e-5;
};

class Embedding : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    int64_t n = get_int("num_embeddings"), d = get_int("dim");
    // PyTorch initialises embeddings from N(0, 1); a uniform of the same variance keeps one code path.
    weight_ = add_param(pf, "weight", {n, d}, std::sqrt(3.0));
    padding_idx_ = get_int("padding_idx", -1);
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override { return ops::embedding(in[0], weight_, padding_idx_); }

 private:
  Tensor weight_;
  int64_t padding_idx_ = -1;
};

class Dropout : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>&, ParamFactory&) override {
    p_ = get_float("p", 0.5);
    if (p_ < 0 || p_ >= 1) fail("p", fmt::format("must be in [0, 1), got {}", p_));
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx& ctx) override {
    if (!ctx.training || p_ == 0) return in[0];
    return std::get<0>(ops::dropout(in[0], p_, true, static_cast<int64_t>(ctx.seed >> 1)));
  }

 private:
  double p_ = 0.5;
};

// An activation of ops.yaml (`activation: true`; its float attribute, e.g. leaky_relu's alpha, from the
// YAML or the op's default), or softmax / log_softmax over `axis`.
class Activation : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override {
    expect_inputs(in, 1);
    const std::string& t = spec_.type;
    schema_ = &op_schema(t);
    if (t == "softmax" || t == "log_softmax") {
      attrs_["axis"] = get_int("axis", -1);
      return;
    }
    if (const char* alpha = kActivations[static_cast<size_t>(parse_activation(t.c_str(), t))].alpha)
      for (const ArgSchema& a : schema_->args)
        if (a.name == alpha) attrs_[alpha] = get_float(alpha, std::stod(a.default_text));
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override { return schema_->call({{in[0]}}, attrs_)[0]; }
  bool runs_channels_last() const override { return spec_.type != "softmax" && spec_.type != "log_softmax"; }  // elementwise

 private:
  const OpSchema* schema_ = nullptr;
  AttrMap attrs_;
};

class Flatten : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override { start_ = get_int("start_axis", 1); }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override { return ops::flatten(in[0], start_); }

 private:
  int64_t start_ = 1;
};

class Reshape : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>&, ParamFactory&) override { shape_ = get_ints("shape"); }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    // The batch axis is kept: `shape` describes one sample.
    std::vector<int64_t> s = {in[0].shape()[0]};
    s.insert(s.end(), shape_.begin(), shape_.end());
    return ops::reshape(in[0], s);
  }

 private:
  std::vector<int64_t> shape_;
};

class Add : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override {
    if (in.size() < 2) fail("inputs", fmt::format("add needs at least 2 inputs, got {}", in.size()));
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    Tensor out = in[0];
    for (size_t i = 1; i < in.size(); ++i) out = ops::add(out, in[i]);
    return out;
  }
  bool runs_channels_last() const override { return true; }  // (the network checks the shapes are equal)
};

class Concat : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>&, ParamFactory&) override { axis_ = get_int("axis", 1); }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override { return ops::concat(in, axis_); }

 private:
  int64_t axis_ = 1;
};

// Any op from ops.yaml: {type: op, op: gelu, inputs: [x], attrs: {...}}; its first output.
class RawOp : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override {
    auto it = spec_.attrs.find("op");
    if (it == spec_.attrs.end() || !std::holds_alternative<std::string>(it->second)) fail("op", "missing key 'op' (the ops.yaml op to run)");
    try {
      schema_ = &op_schema(std::get<std::string>(it->second));
    } catch (const Error& e) {
      fail("op", e.what());
    }
    size_t n = 0;
    for (const auto& a : schema_->args) n += a.is_tensor();
    if (in.size() != n) fail("inputs", fmt::format("op '{}' takes {} tensor inputs, got {}", schema_->name, n, in.size()));
    // YAML gives strings where the schema wants a dtype; everything else converts in the boxed call.
    for (const auto& [key, value] : spec_.op_attrs) {
      const ArgSchema* arg = nullptr;
      for (const auto& a : schema_->args)
        if (a.name == key && !a.is_tensor()) arg = &a;
      if (!arg) fail("attrs", fmt::format("op '{}' has no attribute '{}'", schema_->name, key));
      attrs_[key] = value;
      if (arg->type == "dtype" && std::holds_alternative<std::string>(value)) {
        try {
          attrs_[key] = dtype_from_name(std::get<std::string>(value));
        } catch (const Error& e) {
          fail("attrs", e.what());
        }
      }
    }
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    BoxedInputs boxed;
    for (const auto& t : in) boxed.push_back({t});
    return schema_->call(boxed, attrs_)[0];
  }

 private:
  const OpSchema* schema_ = nullptr;
  AttrMap attrs_;
};

const std::map<std::string, TypeInfo>& registry() {
  static const std::set<std::string> pool = {"kernel_size", "stride", "padding", "ceil_mode", "exclusive"};
  static const std::map<std::string, TypeInfo> r = [] {
    std::map<std::string, TypeInfo> r = {
        {"linear", {create<Linear>, {"out_features", "bias"}}},
        {"conv2d", {create<Conv2d>, {"out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"}}},
        {"max_pool2d", {create<Pool2d>, pool}},
        {"avg_pool2d", {create<Pool2d>, pool}},
        {"adaptive_avg_pool2d", {create<AdaptiveAvgPool2d>, {"output_size"}}},
        {"batch_norm", {create<BatchNorm>, {"momentum", "epsilon"}}},
        {"layer_norm", {create<LayerNorm>, {"begin_norm_axis", "epsilon"}}},
        {"embedding", {create<Embedding>, {"num_embeddings", "dim", "padding_idx"}}},
        {"dropout", {create<Dropout>, {"p"}}},
        {"softmax", {create<Activation>, {"axis"}}},
        {"log_softmax", {create<Activation>, {"axis"}}},
        {"flatten", {create<Flatten>, {"start_axis"}}},
        {"reshape", {create<Reshape>, {"shape"}}},
        {"add", {create<Add>, {}}},
        {"concat", {create<Concat>, {"axis"}}},
        {"op", {create<RawOp>, {"op", "attrs"}}},
    };
    add_transformer_layers(r);
    add_decoder_layers(r);
    // Every activation of ops.yaml is a layer type, with its float attribute as a key.
    for (size_t i = 1; i < kActivationCount; ++i) {
      const ActivationInfo& a = kActivations[i];
      r[a.name] = {create<Activation>, a.alpha ? std::set<std::string>{a.alpha} : std::set<std::string>{}};
    }
    return r;
  }();
  return r;
}

}  // namespace

Tensor ParamFactory::uniform(const std::string& name, const Shape& shape, double bound) {
  Tensor t = ops::uniform(shape, -bound, bound, static_cast<int64_t>(rng_() >> 1));
  t.set_requires_grad(true);
  params_.push_back({name, t, true});
  return t;
}

Tensor ParamFactory::constant(const std::string& name, const Shape& shape, double value, bool trainable) {
  Tensor t = ops::full(shape, value);
  if (trainable) t.set_requires_grad(true);
  params_.push_back({name, t, trainable});
  return t;
}

Tensor ParamFactory::buffer(const std::string& name, const Tensor& value) {
  params_.push_back({name, value, false});
  return value;
}

Tensor Layer::add_param(ParamFactory& pf, const std::string& suffix, const Shape& shape, double bound) {
  param_count_ += shape_numel(shape);
  return pf.uniform(spec_.name + "." + suffix, shape, bound);
}

Tensor Layer::add_constant(ParamFactory& pf, const std::string& suffix, const Shape& shape, double value) {
  param_count_ += shape_numel(shape);
  return pf.constant(spec_.name + "." + suffix, shape, value);
}

std::unique_ptr<Layer> Layer::build_child(const std::string& type, const std::string& suffix, AttrMap attrs,
                                          const std::vector<Shape>& in, ParamFactory& pf) {
  LayerSpec s;
  s.name = spec_.name + "." + suffix;
  s.type = type;
  s.attrs = std::move(attrs);
  s.pos = spec_.pos;
  for (const auto& [key, value] : s.attrs)
    if (auto it = spec_.attr_pos.find(key); it != spec_.attr_pos.end()) s.attr_pos[key] = it->second;
  std::unique_ptr<Layer> child = make_layer(s);
  child->build(in, pf);
  param_count_ += child->param_count();
  return child;
}

[[noreturn]] void Layer::fail(const std::string& key, const std::string& message) const {
  auto it = spec_.attr_pos.find(key);
  const SourcePos& p = it != spec_.attr_pos.end() ? it->second : spec_.pos;
  raise(ErrorCode::kInvalidArgument, "{}: layer '{}' ({}): {}: {}", p.str(), spec_.name, spec_.type, key, message);
}

void Layer::expect_inputs(const std::vector<Shape>& in, size_t n) const {
  if (in.size() != n) fail("inputs", fmt::format("takes {} input(s), got {}", n, in.size()));
}

int64_t Layer::get_int(const std::string& key) const {
  auto it = spec_.attrs.find(key);
  if (it == spec_.attrs.end()) fail(key, "missing (expected an integer)");
  if (auto v = std::get_if<int64_t>(&it->second)) return *v;
  fail(key, fmt::format("expected an integer, got {}", attr_str(it->second)));
}

int64_t Layer::get_int(const std::string& key, int64_t fallback) const {
  return spec_.attrs.count(key) ? get_int(key) : fallback;
}

double Layer::get_float(const std::string& key, double fallback) const {
  auto it = spec_.attrs.find(key);
  if (it == spec_.attrs.end()) return fallback;
  if (auto v = std::get_if<double>(&it->second)) return *v;
  if (auto v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  fail(key, fmt::format("expected a number, got {}", attr_str(it->second)));
}

bool Layer::get_bool(const std::string& key, bool fallback) const {
  auto it = spec_.attrs.find(key);
  if (it == spec_.attrs.end()) return fallback;
  if (auto v = std::get_if<bool>(&it->second)) return *v;
  fail(key, fmt::format("expected true or false, got {}", attr_str(it->second)));
}

std::vector<int64_t> Layer::get_pair(const std::string& key, std::vector<int64_t> fallback) const {
  auto it = spec_.attrs.find(key);
  if (it == spec_.attrs.end()) {
    if (fallback.empty()) fail(key, "missing (expected an integer or a list of two)");
    return fallback;
  }
  std::vector<int64_t> v;
  if (auto i = std::get_if<int64_t>(&it->second)) v = {*i, *i};
  else if (auto l = std::get_if<std::vector<int64_t>>(&it->second)) v = *l;
  if (v.size() != 2) fail(key, fmt::format("expected an integer or a list of two integers, got {}", attr_str(it->second)));
  return v;
}

std::vector<int64_t> Layer::get_ints(const std::string& key) const {
  auto it = spec_.attrs.find(key);
  if (it == spec_.attrs.end()) fail(key, "missing (expected a list of integers)");
  if (auto l = std::get_if<std::vector<int64_t>>(&it->second)) return *l;
  fail(key, fmt::format("expected a list of integers, got {}", attr_str(it->second)));
}

std::string Layer::get_string(const std::string& key, const std::string& fallback, const std::set<std::string>& allowed) const {
  auto it = spec_.attrs.find(key);
  if (it == spec_.attrs.end()) return fallback;
  auto v = std::get_if<std::string>(&it->second);
  if (!v || !allowed.count(*v))
    fail(key, fmt::format("expected one of {}, got {}", fmt::join(allowed, ", "), attr_str(it->second)));
  return *v;
}

const std::set<std::string>* layer_keys(const std::string& type) {
  auto it = registry().find(type);
  return it == registry().end() ? nullptr : &it->second.keys;
}

std::vector<std::string> layer_types() {
  std::vector<std::string> out;
  for (const auto& [name, info] : registry()) out.push_back(name);
  return out;
}

std::unique_ptr<Layer> make_layer(const LayerSpec& spec) { return registry().at(spec.type).factory(spec); }

}  // namespace pd::model
