// The transformer path: scaled_dot_product_attention's streaming kernel against the plain formula
// over many tiles (forward and backward), the model-YAML transformer layers against hand-written
// compositions of ops, their export to a program, and their errors.
#include <filesystem>
#include <limits>
#include <random>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/exec/executor.h"
#include "pd/model/export.h"
#include "pd/model/network.h"
#include "test_util.h"

using pd::Shape;
using pd::Tensor;
using pd::test::error_of;
using pd::test::max_abs_diff;
namespace ops = pd::ops;

namespace {

Tensor randn(const Shape& s, int64_t seed) { return ops::normal(s, 0, 1, seed); }

// softmax(q k^T * scale + mask) v written with matmul and softmax; k and v heads repeated for the
// query heads that share them.
Tensor plain_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& additive_mask) {
  const int64_t group = q.shape()[1] / k.shape()[1];
  auto repeat_heads = [&](const Tensor& t) {
    const Shape& s = t.shape();
    return ops::reshape(ops::expand(ops::unsqueeze(t, {2}), {s[0], s[1], group, s[2], s[3]}), {s[0], s[1] * group, s[2], s[3]});
  };
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.shape()[3]));
  Tensor scores = ops::mul(ops::matmul(q, repeat_heads(k), false, true), Tensor::full_scalar(scale, q.dtype()));
  if (additive_mask.defined()) scores = ops::add(scores, additive_mask);
  return ops::matmul(ops::softmax(scores, -1), repeat_heads(v));
}

// An additive mask [N, 1, Lq, Lk]: random values, -inf for the causal upper triangle when asked.
Tensor additive_mask(int64_t n, int64_t lq, int64_t lk, bool causal, int64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> m(static_cast<size_t>(n * lq * lk));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j)
        m[static_cast<size_t>((b * lq + i) * lk + j)] = causal && j > i ? -std::numeric_limits<float>::infinity() : 0.f;
  for (float& v : m) v += dist(rng);  // the same random part with or without the triangle
  return Tensor::from_vector<float>(m, {n, 1, lq, lk});
}

struct Grads {
  Tensor out, dq, dk, dv;
};

template <typename F>
Grads run_with_grads(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& upstream, F&& attention) {
  Tensor q = q0.clone(), k = k0.clone(), v = v0.clone();
  for (Tensor* t : {&q, &k, &v}) t->set_requires_grad(true);
  Tensor out = attention(q, k, v);
  pd::backward(ops::sum(ops::mul(out, upstream)));
  return {out, q.grad(), k.grad(), v.grad()};
}

}  // namespace

TEST_CASE("scaled_dot_product_attention streams over many tiles and matches the plain formula", "[transformer]") {
  // 150 queries and 300 keys cross the kernel's 64-query and 128-key tiles; 4 query heads share 2 kv heads.
  const Tensor q = randn({2, 4, 150, 16}, 1), k = randn({2, 2, 300, 16}, 2), v = randn({2, 2, 300, 8}, 3);
  const Tensor upstream = randn({2, 4, 150, 8}, 4);
  for (bool causal : {false, true}) {
    DYNAMIC_SECTION("causal " << causal) {
      const Tensor mask = additive_mask(2, 150, 300, causal, 5);
      // The kernel gets the random part as a mask and the triangle as is_causal.
      const Tensor random_part = additive_mask(2, 150, 300, false, 5);
      Grads want = run_with_grads(q, k, v, upstream, [&](auto& a, auto& b, auto& c) { return plain_attention(a, b, c, mask); });
      Grads got = run_with_grads(q, k, v, upstream, [&](auto& a, auto& b, auto& c) {
        return std::get<0>(ops::scaled_dot_product_attention(a, b, c, random_part, 0.0, causal));
      });
      CHECK(max_abs_diff(got.out, want.out) < 2e-5f);
      CHECK(max_abs_diff(got.dq, want.dq) < 2e-4f);
      CHECK(max_abs_diff(got.dk, want.dk) < 2e-4f);
      CHECK(max_abs_diff(got.dv, want.dv) < 2e-4f);
    }
  }
}

TEST_CASE("scaled_dot_product_attention: bool masks, fully masked rows, dropout", "[transformer]") {
  const Tensor q = randn({1, 2, 70, 8}, 11), k = randn({1, 2, 200, 8}, 12), v = randn({1, 2, 200, 8}, 13);
  // Query row 3 may attend nothing: its output is zeros, not NaN, and it passes no gradient.
  std::vector<uint8_t> allowed(70 * 200);
  for (size_t i = 0; i < allowed.size(); ++i) allowed[i] = (i / 200 != 3) && (i * 7919 % 5 != 0);
  std::vector<bool> bits(allowed.begin(), allowed.end());
  Tensor bool_mask = Tensor::empty({70, 200}, pd::DType::boolean);
  for (size_t i = 0; i < bits.size(); ++i) bool_mask.data<bool>()[i] = bits[i];
  std::vector<float> add(70 * 200);
  for (size_t i = 0; i < add.size(); ++i) add[i] = bits[i] ? 0.f : -std::numeric_limits<float>::infinity();
  const Tensor additive = Tensor::from_vector<float>(add, {70, 200});
  const Tensor upstream = randn({1, 2, 70, 8}, 14);

  Grads got = run_with_grads(q, k, v, upstream, [&](auto& a, auto& b, auto& c) {
    return std::get<0>(ops::scaled_dot_product_attention(a, b, c, bool_mask));
  });
  const auto out = got.out.to_vector<float>();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t e = 0; e < 8; ++e) CHECK(out[static_cast<size_t>((h * 70 + 3) * 8 + e)] == 0.f);
  for (float x : got.dq.to_vector<float>()) REQUIRE(std::isfinite(x));
  // Elsewhere the bool mask is the additive mask of 0 and -inf.
  Tensor want = std::get<0>(ops::scaled_dot_product_attention(q, k, v, additive));
  CHECK(max_abs_diff(got.out, want) < 1e-6f);

  // Dropout: reproducible from the seed, different across seeds, unbiased on average, and its backward
  // regenerates the forward's mask (checked by the op's gradcheck; here: the gradients are finite).
  Tensor d1 = std::get<0>(ops::scaled_dot_product_attention(q, k, v, Tensor(), 0.5, false, 0.0, 42));
  Tensor d2 = std::get<0>(ops::scaled_dot_product_attention(q, k, v, Tensor(), 0.5, false, 0.0, 42));
  Tensor d3 = std::get<0>(ops::scaled_dot_product_attention(q, k, v, Tensor(), 0.5, false, 0.0, 43));
  CHECK(max_abs_diff(d1, d2) == 0.f);
  CHECK(max_abs_diff(d1, d3) > 0.1f);
  Tensor plain = std::get<0>(ops::scaled_dot_product_attention(q, k, v));
  Tensor mean_of_drops = ops::zeros(plain.shape());
  for (int64_t s = 0; s < 200; ++s)
    mean_of_drops = ops::add(mean_of_drops, std::get<0>(ops::scaled_dot_product_attention(q, k, v, Tensor(), 0.5, false, 0.0, s)));
  mean_of_drops = ops::mul(mean_of_drops, Tensor::full_scalar(1.0 / 200, pd::DType::f32));
  CHECK(max_abs_diff(mean_of_drops, plain) < 0.1f);
}

TEST_CASE("multi_head_attention layer computes nn.MultiheadAttention's formula, with a key-padding mask", "[transformer]") {
  const char* yaml = R"(
inputs:
  x: {shape: [5, 8], dtype: f32}
  memory: {shape: [7, 6], dtype: f32}
  pad: {shape: [7], dtype: f32}
  label: {shape: [], dtype: i64}
network:
  - {name: att, type: multi_head_attention, inputs: [x, memory], num_heads: 4, num_kv_heads: 2, mask: pad}
  - {name: pooled, type: mean_pool}
  - {name: logits, type: linear, out_features: 3}
)";
  pd::model::Network net(pd::model::parse_model_yaml(yaml, "cross.yaml"));
  auto state = net.state();
  REQUIRE(state.at("att.q_proj_weight").shape() == Shape{8, 8});
  REQUIRE(state.at("att.kv_proj_weight").shape() == Shape{8, 6});  // 2 kv heads of dim 2, for k and v
  REQUIRE(state.at("att.out_proj.weight").shape() == Shape{8, 8});
  for (const char* b : {"att.q_proj_bias", "att.kv_proj_bias", "att.out_proj.bias"}) {  // they start at zero; make them count
    Tensor r = randn(state.at(b).shape(), 9);
    std::copy_n(r.data<float>(), r.numel(), state.at(b).data<float>());
  }

  const Tensor x = randn({3, 5, 8}, 21), memory = randn({3, 7, 6}, 22);
  std::vector<float> pad(3 * 7, 0.f);
  pad[2 * 7 + 6] = pad[2 * 7 + 5] = -std::numeric_limits<float>::infinity();  // the last sample ignores 2 keys
  const Tensor pad_mask = Tensor::from_vector<float>(pad, {3, 7});
  pd::NoGradGuard no_grad;
  Tensor got = net.forward({{"x", x}, {"memory", memory}, {"pad", pad_mask}}, false, 0).at("att");

  auto heads = [](const Tensor& t, int64_t h) {
    const Shape& s = t.shape();
    return ops::transpose(ops::reshape(t, {s[0], s[1], h, s[2] / h}), {0, 2, 1, 3});
  };
  Tensor q = heads(ops::linear(x, state.at("att.q_proj_weight"), state.at("att.q_proj_bias")), 4);
  auto kv = ops::split(ops::linear(memory, state.at("att.kv_proj_weight"), state.at("att.kv_proj_bias")), {2}, -1);
  Tensor o = plain_attention(q, heads(kv[0], 2), heads(kv[1], 2), ops::reshape(pad_mask, {3, 1, 1, 7}));
  o = ops::reshape(ops::transpose(o, {0, 2, 1, 3}), {3, 5, 8});
  Tensor want = ops::linear(o, state.at("att.out_proj.weight"), state.at("att.out_proj.bias"));
  CHECK(max_abs_diff(got, want) < 1e-5f);
}

TEST_CASE("a small ViT: shapes, parameter counts, and the exported program computes what the network does", "[transformer]") {
  const char* yaml = R"(
inputs:
  image: {shape: [2, 8, 8], dtype: f32}
  label: {shape: [], dtype: i64}
network:
  - {name: patches, type: patch_embedding, patch_size: 4, dim: 16}
  - {name: tokens, type: class_token}
  - {name: positions, type: positional_embedding, kind: sinusoidal}
  - {name: enc1, type: transformer_encoder_layer, num_heads: 4, dim_feedforward: 32, dropout: 0.1}
  - {name: enc2, type: transformer_encoder_layer, num_heads: 4, num_kv_heads: 2, dim_feedforward: 32, activation: gelu, norm_first: true, causal: true}
  - {name: first, type: select_token, index: -5}
  - {name: all, type: mean_pool, input: enc2}
  - {name: both, type: add, inputs: [first, all]}
  - {name: logits, type: linear, out_features: 3}
)";
  pd::model::Network net(pd::model::parse_model_yaml(yaml, "vit.yaml"));
  const auto rows = net.summary();
  REQUIRE(rows.size() == 9);
  CHECK(rows[0].output_shape == "[N, 4, 16]");
  CHECK(rows[1].output_shape == "[N, 5, 16]");
  CHECK(rows[5].output_shape == "[N, 16]");
  CHECK(rows[0].params == 2 * 16 * 4 * 4 + 16);
  CHECK(rows[2].params == 0);  // the sinusoidal table is a buffer
  // nn.TransformerEncoderLayer(16, 4, 32): in_proj 48x16+48, out_proj 16x16+16, 32x16+32, 16x32+16, two norms.
  CHECK(rows[3].params == 48 * 16 + 48 + 16 * 16 + 16 + 32 * 16 + 32 + 16 * 32 + 16 + 4 * 16);
  CHECK(rows[4].params == (16 + 2 * 8) * 16 + (16 + 2 * 8) + 16 * 16 + 16 + 32 * 16 + 32 + 16 * 32 + 16 + 4 * 16);
  CHECK(net.state().count("enc1.self_attn.in_proj_weight") == 1);
  CHECK(net.state().count("enc2.linear1.weight") == 1);

  // Training mode with dropout differs between steps; evaluation does not.
  const Tensor x = randn({3, 2, 8, 8}, 31);
  {
    pd::NoGradGuard no_grad;
    Tensor t0 = net.forward({{"image", x}}, true, 0).at("logits"), t1 = net.forward({{"image", x}}, true, 1).at("logits");
    CHECK(max_abs_diff(t0, t1) > 0.f);
  }
  pd::ir::Program p = pd::model::to_program(net);
  CHECK(p.value(p.outputs()[0]).type.shape == Shape{-1, 3});
  for (int64_t batch : {1, 3}) {
    Tensor xb = randn({batch, 2, 8, 8}, 40 + batch);
    pd::NoGradGuard no_grad;
    Tensor want = net.forward({{"image", xb}}, false, 0).at("logits");
    CHECK(max_abs_diff(pd::exec::Executor(p).run({{"image", xb}})[0], want) < 1e-5f);
  }
}

TEST_CASE("transformer layers: errors name the layer, the key and what was expected", "[transformer]") {
  auto build = [](const std::string& layer) {
    return error_of([&] {
      pd::model::Network net(pd::model::parse_model_yaml(
          "inputs:\n  image: {shape: [1, 8, 8], dtype: f32}\n  label: {shape: [], dtype: i64}\nnetwork:\n"
          "  - {name: patches, type: patch_embedding, patch_size: 4, dim: 12}\n" + layer +
              "  - {name: logits, type: mean_pool}\n",
          "bad.yaml"));
    });
  };
  CHECK_THAT(build("  - {name: a, type: multi_head_attention, num_heads: 5}\n"),
             Catch::Contains("bad.yaml:6") && Catch::Contains("layer 'a'") && Catch::Contains("num_heads: must divide the model dim 12"));
  CHECK_THAT(build("  - {name: a, type: multi_head_attention, num_heads: 4, num_kv_heads: 3}\n"), Catch::Contains("num_kv_heads"));
  CHECK_THAT(build("  - {name: a, type: multi_head_attention, num_heads: 4, mask: image}\n"),
             Catch::Contains("mask: must be [N, 4] (key padding) or [N, 4, 4]"));
  CHECK_THAT(build("  - {name: a, type: multi_head_attention, num_heads: 4, mask: later}\n"),
             Catch::Contains("key 'mask' must name an input or an earlier layer"));
  CHECK_THAT(build("  - {name: e, type: transformer_encoder_layer, num_heads: 4, activation: swish}\n"),
             Catch::Contains("activation: expected one of gelu, relu, got swish"));
  CHECK_THAT(build("  - {name: s, type: select_token, index: 4}\n"), Catch::Contains("token 4 is out of range for 4 tokens"));
  CHECK_THAT(build("  - {name: p, type: positional_embedding, kind: rotary}\n"), Catch::Contains("kind: expected one of learned, sinusoidal"));
  CHECK_THAT(error_of([] {
               pd::model::Network net(pd::model::parse_model_yaml(
                   "inputs:\n  image: {shape: [1, 8, 8], dtype: f32}\nnetwork:\n  - {type: patch_embedding, patch_size: 3, dim: 4}\n", "p.yaml"));
             }),
             Catch::Contains("patches [3, 3] must tile the 8x8 image exactly"));
}
