// Shape rules of scaled_dot_product_attention and its gradient. Extents of -1 (a program's unknown
// batch) match anything.
#include "pd/core/error.h"
#include "pd/ops/shape_rules.h"

namespace pd::infer {
namespace {

bool same_extent(int64_t a, int64_t b) { return a == b || a == -1 || b == -1; }

void check_4d(const char* op, In t, const char* layout) {
  PD_CHECK(t.t.dim() == 4, ErrorCode::kShape, "{}: argument '{}' must be 4-D {}, but received shape {}", op, t.name, layout,
           shape_str(t.t.shape()));
}

// The mask broadcasts to the scores [batch, heads, query_len, key_len] and is bool or of q's dtype.
void check_mask(const char* op, In mask, const Shape& scores, In q) {
  if (!mask.t.defined()) return;
  const Shape& ms = mask.t.shape();
  bool ok = ms.size() <= 4;
  for (size_t i = 0; ok && i < ms.size(); ++i) {
    int64_t m = ms[ms.size() - 1 - i], s = scores[3 - i];
    ok = m == 1 || same_extent(m, s);
  }
  PD_CHECK(ok, ErrorCode::kShape,
           "{}: argument '{}' of shape {} does not broadcast to the attention scores [batch, heads, query_len, key_len] = {}",
           op, mask.name, shape_str(ms), shape_str(scores));
  PD_CHECK(mask.t.dtype() == DType::boolean || mask.t.dtype() == q.t.dtype(), ErrorCode::kDType,
           "{}: argument '{}' must be bool (true = may attend) or additive of '{}''s dtype {}, but received {}", op,
           mask.name, q.name, dtype_name(q.t.dtype()), dtype_name(mask.t.dtype()));
}

}  // namespace

Shape attention(const char* op, In q, In k, In v, In mask) {
  check_4d(op, q, "[batch, heads, query_len, head_dim]");
  check_4d(op, k, "[batch, kv_heads, key_len, head_dim]");
  check_4d(op, v, "[batch, kv_heads, key_len, value_dim]");
  const Shape &qs = q.t.shape(), &ks = k.t.shape(), &vs = v.t.shape();
  PD_CHECK(same_extent(qs[0], ks[0]) && same_extent(qs[0], vs[0]), ErrorCode::kShape,
           "{}: batch extents differ: '{}' {}, '{}' {}, '{}' {}", op, q.name, shape_str(qs), k.name, shape_str(ks), v.name,
           shape_str(vs));
  PD_CHECK(ks[1] == vs[1] && ks[2] == vs[2], ErrorCode::kShape,
           "{}: arguments '{}' {} and '{}' {} must agree in heads and key length", op, k.name, shape_str(ks), v.name,
           shape_str(vs));
  PD_CHECK(ks[1] > 0 && qs[1] % ks[1] == 0, ErrorCode::kShape,
           "{}: the {} heads of '{}' must be a multiple of the {} heads of '{}' (grouped-query attention)", op, qs[1], q.name,
           ks[1], k.name);
  PD_CHECK(qs[3] == ks[3], ErrorCode::kShape, "{}: head_dim of '{}' {} and '{}' {} differ", op, q.name, shape_str(qs), k.name,
           shape_str(ks));
  PD_CHECK(k.t.dtype() == q.t.dtype() && v.t.dtype() == q.t.dtype(), ErrorCode::kDType,
           "{}: arguments '{}', '{}' and '{}' must share a dtype, but received {}, {} and {}", op, q.name, k.name, v.name,
           dtype_name(q.t.dtype()), dtype_name(k.t.dtype()), dtype_name(v.t.dtype()));
  check_mask(op, mask, {qs[0], qs[1], qs[2], ks[2]}, q);
  return {qs[0], qs[1], qs[2], vs[3]};
}

Shape attention_lse(const char* op, In q, In k, In v, In mask) {
  Shape out = attention(op, q, k, v, mask);
  out.pop_back();
  return out;
}

Shape attention_grad(const char* op, In q, In k, In v, In mask, In grad) {
  Shape out = attention(op, q, k, v, mask);
  PD_CHECK(grad.t.shape() == out, ErrorCode::kShape, "{}: argument '{}' must have the output's shape {}, but received {}", op,
           grad.name, shape_str(out), shape_str(grad.t.shape()));
  return q.t.shape();
}

Shape qkv_attention(const char* op, In qkv, In mask, int64_t num_heads, int64_t num_kv_heads) {
  PD_CHECK(qkv.t.dim() == 3, ErrorCode::kShape, "{}: argument '{}' must be 3-D [batch, len, (heads + 2 kv_heads) * head_dim], but received shape {}",
           op, qkv.name, shape_str(qkv.t.shape()));
  PD_CHECK(num_kv_heads > 0 && num_heads > 0 && num_heads % num_kv_heads == 0 && num_heads <= (int64_t{1} << 31),
           ErrorCode::kInvalidArgument, "{}: num_heads {} must be a positive multiple of num_kv_heads {} (at most 2^31)", op,
           num_heads, num_kv_heads);
  const Shape& s = qkv.t.shape();
  const int64_t packed = num_heads + 2 * num_kv_heads;
  PD_CHECK(s[2] >= 0 && s[2] % packed == 0, ErrorCode::kShape,
           "{}: the last extent of '{}' {} must hold {} heads of one size (num_heads + 2 num_kv_heads)", op, qkv.name,
           shape_str(s), packed);
  const int64_t e = s[2] / packed;
  check_mask(op, mask, {s[0], num_heads, s[1], s[1]}, qkv);
  return {s[0], s[1], num_heads * e};
}

}  // namespace pd::infer
