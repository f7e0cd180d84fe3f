// The transformer layers of model YAMLs, with PyTorch's semantics, parameter names and default
// initialisation (nn.MultiheadAttention, nn.TransformerEncoderLayer) and torchvision's ViT pieces.
// Token tensors are [N, tokens, dim].
#include <fmt/format.h>

#include <cmath>

#include "layer_types.h"
#include "op_api.h"

namespace pd::model {
namespace {

double xavier_bound(int64_t fan_in, int64_t fan_out) { return std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)); }

// Seeds for the dropouts inside one layer call, apart from each other.
uint64_t sub_seed(uint64_t seed, uint64_t k) { return (seed ^ (k * 0x9E3779B97F4A7C15ull)) >> 1; }

Tensor dropout(const Tensor& x, double p, const ForwardCtx& ctx, uint64_t k) {
  if (!ctx.training || p == 0) return x;
  return std::get<0>(ops::dropout(x, p, true, static_cast<int64_t>(sub_seed(ctx.seed, k))));
}

// Self attention (one input) or cross attention (the query, then the memory it attends to), with an
// optional per-sample `mask: NAME`: [N, keys] (key padding) or [N, queries, keys], bool (true = may
// attend, as in F.scaled_dot_product_attention; nn.MultiheadAttention's key_padding_mask is the
// opposite) or additive, shared by all heads.
class MultiHeadAttention : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    has_mask_ = spec_.attrs.count("mask") > 0;
    const size_t sources = in.size() - (has_mask_ ? 1 : 0);
    if (sources != 1 && sources != 2)
      fail("inputs", fmt::format("takes the query, or the query and the memory it attends to, got {} inputs", sources));
    cross_ = sources == 2;
    for (size_t i = 0; i < sources; ++i)
      if (in[i].size() != 3) fail("inputs", fmt::format("input {} must be [N, tokens, dim], got {}", i, shape_str(in[i])));
    if (has_mask_) {
      const Shape& m = in.back();
      const int64_t queries = in[0][1], keys = in[sources - 1][1];
      const bool padding = m.size() == 2 && m[1] == keys, full = m.size() == 3 && m[1] == queries && m[2] == keys;
      if (!padding && !full)
        fail("mask", fmt::format("must be [N, {1}] (key padding) or [N, {0}, {1}] (per query), got {2}", queries, keys,
                                 shape_str(m)));
    }
    dim_ = in[0][2];
    heads_ = get_int("num_heads");
    kv_heads_ = get_int("num_kv_heads", heads_);
    if (heads_ <= 0 || dim_ % heads_ != 0) fail("num_heads", fmt::format("must divide the model dim {}, got {}", dim_, heads_));
    if (kv_heads_ <= 0 || heads_ % kv_heads_ != 0)
      fail("num_kv_heads", fmt::format("must divide num_heads {}, got {}", heads_, kv_heads_));
    head_dim_ = dim_ / heads_;
    kv_dim_ = kv_heads_ * head_dim_;
    dropout_ = get_float("dropout", 0.0);
    if (dropout_ < 0 || dropout_ >= 1) fail("dropout", fmt::format("must be in [0, 1), got {}", dropout_));
    causal_ = get_bool("causal", false);
    const bool bias = get_bool("bias", true);
    // PyTorch: Xavier-uniform input projections, zero biases, the output projection as a Linear.
    if (!cross_) {
      in_proj_ = add_param(pf, "in_proj_weight", {dim_ + 2 * kv_dim_, dim_}, xavier_bound(dim_, dim_ + 2 * kv_dim_));
      if (bias) in_bias_ = add_constant(pf, "in_proj_bias", {dim_ + 2 * kv_dim_}, 0.0);
    } else {
      const int64_t mem = in[1][2];
      in_proj_ = add_param(pf, "q_proj_weight", {dim_, dim_}, xavier_bound(dim_, dim_));
      kv_proj_ = add_param(pf, "kv_proj_weight", {2 * kv_dim_, mem}, xavier_bound(mem, 2 * kv_dim_));
      if (bias) in_bias_ = add_constant(pf, "q_proj_bias", {dim_}, 0.0);
      if (bias) kv_bias_ = add_constant(pf, "kv_proj_bias", {2 * kv_dim_}, 0.0);
    }
    out_proj_ = add_param(pf, "out_proj.weight", {dim_, dim_}, 1.0 / std::sqrt(static_cast<double>(dim_)));
    if (bias) out_bias_ = add_constant(pf, "out_proj.bias", {dim_}, 0.0);
  }

  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx& ctx) override {
    Tensor q, k, v;
    if (!cross_) {
      std::vector<Tensor> qkv = ops::split(ops::linear(in[0], in_proj_, in_bias_), {dim_, kv_dim_, kv_dim_}, -1);
      q = qkv[0], k = qkv[1], v = qkv[2];
    } else {
      q = ops::linear(in[0], in_proj_, in_bias_);
      std::vector<Tensor> kv = ops::split(ops::linear(in[1], kv_proj_, kv_bias_), {kv_dim_, kv_dim_}, -1);
      k = kv[0], v = kv[1];
    }
    // The mask gains the heads axis (and the queries axis for key padding): [N, 1, queries or 1, keys].
    const Tensor mask = !has_mask_ ? Tensor() : ops::unsqueeze(in.back(), in.back().dim() == 2 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1});
    const bool drop = ctx.training && dropout_ > 0;
    Tensor o = std::get<0>(ops::scaled_dot_product_attention(split_heads(q, heads_), split_heads(k, kv_heads_),
                                                             split_heads(v, kv_heads_), mask, drop ? dropout_ : 0.0, causal_,
                                                             0.0, drop ? static_cast<int64_t>(sub_seed(ctx.seed, 1)) : 0));
    const Shape& s = in[0].shape();
    o = ops::reshape(ops::transpose(o, {0, 2, 1, 3}), {s[0], s[1], dim_});
    return ops::linear(o, out_proj_, out_bias_);
  }

 private:
  // [N, L, heads * head_dim] -> [N, heads, L, head_dim]
  Tensor split_heads(const Tensor& t, int64_t heads) const {
    return ops::transpose(ops::reshape(t, {t.shape()[0], t.shape()[1], heads, head_dim_}), {0, 2, 1, 3});
  }

  Tensor in_proj_, in_bias_, kv_proj_, kv_bias_, out_proj_, out_bias_;
  int64_t dim_ = 0, heads_ = 1, kv_heads_ = 1, head_dim_ = 0, kv_dim_ = 0;
  double dropout_ = 0;
  bool causal_ = false, cross_ = false, has_mask_ = false;
};

// nn.TransformerEncoderLayer: self attention and a feed-forward block, each with a residual and a
// layer norm, after the block (post-norm, PyTorch's default) or before it (`norm_first: true`).
class TransformerEncoderLayer : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    has_mask_ = spec_.attrs.count("mask") > 0;
    if (in.size() != (has_mask_ ? 2u : 1u)) fail("inputs", fmt::format("takes one input (and a mask), got {}", in.size()));
    if (in[0].size() != 3) fail("input", fmt::format("must be [N, tokens, dim], got {}", shape_str(in[0])));
    const int64_t dim = in[0][2];
    const int64_t ff = get_int("dim_feedforward", 4 * dim);
    if (ff <= 0) fail("dim_feedforward", fmt::format("must be positive, got {}", ff));
    dropout_ = get_float("dropout", 0.1);
    if (dropout_ < 0 || dropout_ >= 1) fail("dropout", fmt::format("must be in [0, 1), got {}", dropout_));
    gelu_ = get_string("activation", "relu", {"relu", "gelu"}) == "gelu";
    norm_first_ = get_bool("norm_first", false);
    const double eps = get_float("layer_norm_eps", 1e-5);
    const bool bias = get_bool("bias", true);

    AttrMap attn = {{"num_heads", get_int("num_heads")}, {"dropout", dropout_}, {"causal", get_bool("causal", false)}, {"bias", bias}};
    if (spec_.attrs.count("num_kv_heads")) attn["num_kv_heads"] = get_int("num_kv_heads");
    if (has_mask_) attn["mask"] = spec_.attrs.at("mask");
    self_attn_ = build_child("multi_head_attention", "self_attn", attn, in, pf);
    const std::vector<Shape> x = {in[0]};
    linear1_ = build_child("linear", "linear1", {{"out_features", ff}, {"bias", bias}}, x, pf);
    linear2_ = build_child("linear", "linear2", {{"out_features", dim}, {"bias", bias}}, std::vector<Shape>{Shape{in[0][0], in[0][1], ff}}, pf);
    norm1_ = build_child("layer_norm", "norm1", {{"epsilon", eps}}, x, pf);
    norm2_ = build_child("layer_norm", "norm2", {{"epsilon", eps}}, x, pf);
  }

  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx& ctx) override {
    Tensor x = in[0];
    auto attention = [&](const Tensor& t) {
      std::vector<Tensor> args = {t};
      if (has_mask_) args.push_back(in[1]);
      return dropout(self_attn_->forward(args, ctx), dropout_, ctx, 2);
    };
    auto feed_forward = [&](const Tensor& t) {
      Tensor h = linear1_->forward({t}, ctx);
      h = dropout(gelu_ ? ops::gelu(h) : ops::relu(h), dropout_, ctx, 3);
      return dropout(linear2_->forward({h}, ctx), dropout_, ctx, 4);
    };
    if (norm_first_) {
      x = ops::add(x, attention(norm1_->forward({x}, ctx)));
      return ops::add(x, feed_forward(norm2_->forward({x}, ctx)));
    }
    x = norm1_->forward({ops::add(x, attention(x))}, ctx);
    return norm2_->forward({ops::add(x, feed_forward(x))}, ctx);
  }

 private:
  std::unique_ptr<Layer> self_attn_, linear1_, linear2_, norm1_, norm2_;
  double dropout_ = 0.1;
  bool gelu_ = false, norm_first_ = false, has_mask_ = false;
};

// Image [N, C, H, W] -> patch tokens [N, (H / p) * (W / p), dim]: a conv with kernel = stride = patch.
class PatchEmbedding : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    if (in[0].size() != 4) fail("input", fmt::format("needs an image [N, C, H, W], got {}", shape_str(in[0])));
    const std::vector<int64_t> p = get_pair("patch_size", {});
    if (p[0] <= 0 || p[1] <= 0 || in[0][2] % p[0] != 0 || in[0][3] % p[1] != 0)
      fail("patch_size", fmt::format("patches [{}, {}] must tile the {}x{} image exactly", p[0], p[1], in[0][2], in[0][3]));
    const std::vector<int64_t> patch = {p[0], p[1]};
    proj_ = build_child("conv2d", "proj",
                        {{"out_channels", get_int("dim")}, {"kernel_size", patch}, {"stride", patch}, {"bias", get_bool("bias", true)}},
                        in, pf);
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx& ctx) override {
    return ops::transpose(ops::flatten(proj_->forward(in, ctx), 2), {0, 2, 1});
  }

 private:
  std::unique_ptr<Layer> proj_;
};

// Adds a position code [1, tokens, dim]: learned (ViT: initialised with std 0.02) or the fixed
// sinusoidal table of "Attention is all you need".
class PositionalEmbedding : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    if (in[0].size() != 3) fail("input", fmt::format("must be [N, tokens, dim], got {}", shape_str(in[0])));
    const int64_t len = in[0][1], dim = in[0][2];
    if (get_string("kind", "learned", {"learned", "sinusoidal"}) == "learned") {
      table_ = add_param(pf, "weight", {1, len, dim}, 0.02 * std::sqrt(3.0));  // uniform with std 0.02
      return;
    }
    std::vector<float> t(static_cast<size_t>(len * dim));
    for (int64_t pos = 0; pos < len; ++pos)
      for (int64_t i = 0; i < dim; ++i) {
        const double angle = static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(i - i % 2) / static_cast<double>(dim));
        t[static_cast<size_t>(pos * dim + i)] = static_cast<float>(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
      }
    table_ = pf.buffer(spec_.name + ".table", Tensor::from_vector<float>(t, {1, len, dim}));
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override { return ops::add(in[0], table_); }

 private:
  Tensor table_;
};

// Prepends a learned token [1, 1, dim] (zeros at first, as in ViT) to every sequence. Written as the
// sum of the zero-padded sequence and the zero-padded token, which broadcasts over any batch size, so
// the exported program keeps its batch axis free.
class ClassToken : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    if (in[0].size() != 3) fail("input", fmt::format("must be [N, tokens, dim], got {}", shape_str(in[0])));
    tokens_ = in[0][1];
    token_ = add_constant(pf, "token", {1, 1, in[0][2]}, 0.0);
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    return ops::add(ops::pad(in[0], {0, 0, 1, 0}), ops::pad(token_, {0, 0, 0, tokens_}));
  }

 private:
  Tensor token_;
  int64_t tokens_ = 0;
};

// [N, tokens, dim] -> [N, dim]: the mean over tokens (mean_pool), or one token (select_token: `index`,
// negative from the end).
class MeanPool : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override {
    expect_inputs(in, 1);
    if (in[0].size() != 3) fail("input", fmt::format("must be [N, tokens, dim], got {}", shape_str(in[0])));
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override { return ops::mean(in[0], {1}); }
};

class SelectToken : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override {
    expect_inputs(in, 1);
    if (in[0].size() != 3) fail("input", fmt::format("must be [N, tokens, dim], got {}", shape_str(in[0])));
    const int64_t tokens = in[0][1], i = get_int("index", 0);
    if (i < -tokens || i >= tokens) fail("index", fmt::format("token {} is out of range for {} tokens", i, tokens));
    index_ = i < 0 ? i + tokens : i;
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    return ops::squeeze(ops::slice(in[0], {1}, {index_}, {index_ + 1}), {1});
  }

 private:
  int64_t index_ = 0;
};

}  // namespace

void add_transformer_layers(std::map<std::string, TypeInfo>& r) {
  r["multi_head_attention"] = {create<MultiHeadAttention>, {"num_heads", "num_kv_heads", "dropout", "causal", "bias", "mask"}};
  r["transformer_encoder_layer"] = {create<TransformerEncoderLayer>,
                                    {"num_heads", "num_kv_heads", "dim_feedforward", "dropout", "activation", "norm_first",
                                     "layer_norm_eps", "causal", "bias", "mask"}};
  r["patch_embedding"] = {create<PatchEmbedding>, {"patch_size", "dim", "bias"}};
  r["positional_embedding"] = {create<PositionalEmbedding>, {"kind"}};
  r["class_token"] = {create<ClassToken>, {}};
  r["mean_pool"] = {create<MeanPool>, {}};
  r["select_token"] = {create<SelectToken>, {"index"}};
}

}  // namespace pd::model
