// scaled_dot_product_attention in ONNX: the plain formula, as torch.onnx writes F.scaled_dot_product_
// attention (MatMul, Mul by the scale, the mask as Add or Where, Softmax, MatMul). Grouped-query
// attention matches each kv head with its group of query heads by giving the query a group axis
// ([N, Hk, G, Lq, E]) that broadcasts against the kv heads' [N, Hk, 1, Lk, E]. The causal limit is an
// additive constant. One difference remains: a query row with nothing to attend gives NaN in ONNX
// (softmax over -inf) and zeros here.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "export_context.h"
#include "onnx_tensor.h"

namespace pd::io::onnx_export {

using Ints = std::vector<int64_t>;

void scaled_dot_product_attention(ExportContext& c) {
  if (c.out_used(1)) c.refuse("its log-sum-exp output is read (only training programs read it)");
  if (c.attr_float("dropout_p") > 0) c.refuse("attention dropout (export the inference model)");
  c.decomposed();
  const Shape& q = c.in_type(0).shape;
  const Shape& k = c.in_type(1).shape;
  const Shape& v = c.in_type(2).shape;
  const int64_t H = q[1], Hk = k[1], Lq = q[2], Lk = k[2], E = q[3];
  if (H < 0 || Hk < 0 || E < 0) c.refuse("attention whose heads or head size are not known when exporting");
  const DType t = c.in_type(0).dtype;
  const double scale = c.attr_float("scale") != 0 ? c.attr_float("scale") : 1.0 / std::sqrt(static_cast<double>(E));
  const int64_t group = H / Hk;

  // Grouped heads: q [N, H, Lq, E] -> [N, Hk, G, Lq, E]; k, v gain the group axis as 1.
  std::string qg = c.in(0), kg = c.in(1), vg = c.in(2);
  if (group > 1) {
    qg = c.tmp("q_grouped");
    c.node("Reshape", {c.in(0), c.ints({0, Hk, group, Lq, E}, "q_grouped_shape")}, {qg});
    kg = c.tmp("k_grouped"), vg = c.tmp("v_grouped");
    const std::string axis = c.ints({2}, "group_axis");
    c.node("Unsqueeze", {c.in(1), axis}, {kg});
    c.node("Unsqueeze", {c.in(2), axis}, {vg});
  }
  const int64_t rank = group > 1 ? 5 : 4;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
  std::swap(perm[rank - 1], perm[rank - 2]);
  const std::string kt = c.tmp("k_t"), raw = c.tmp("scores_raw"), scores = c.tmp("scores");
  set_attr(c.node("Transpose", {kg}, {kt}), "perm", perm);
  c.node("MatMul", {qg, kt}, {raw});
  c.node("Mul", {raw, c.scalar(scale, t, "attention_scale")}, {scores});

  std::string masked = scores;
  if (!c.in(3).empty()) {  // the mask broadcasts over [N, H, Lq, Lk]; grouped, over [N, Hk, G, Lq, Lk]
    std::string mask = c.in(3);
    const Shape& m = c.in_type(3).shape;
    const size_t heads_axis = m.size() == 4 ? 1 : 0;  // where the mask's heads axis is, if it has one
    if (group > 1 && m.size() >= 3) {
      mask = c.tmp("mask_grouped");
      if (m[heads_axis] == 1) {  // [N, 1, Lq, Lk] -> [N, 1, 1, Lq, Lk]; [1, Lq, Lk] broadcasts as it is
        if (m.size() == 4) c.node("Unsqueeze", {c.in(3), c.ints({2}, "group_axis")}, {mask});
        else mask = c.in(3);
      } else {  // a mask per query head: its heads axis splits like q's
        Ints shape{Hk, group, m[m.size() - 2], m[m.size() - 1]};
        if (m.size() == 4) shape.insert(shape.begin(), 0);
        c.node("Reshape", {c.in(3), c.ints(shape, "mask_grouped_shape")}, {mask});
      }
    }
    masked = c.tmp("scores_masked");
    if (c.in_type(3).dtype == DType::boolean)
      c.node("Where", {mask, scores, c.scalar(-std::numeric_limits<double>::infinity(), t, "masked_out")}, {masked});
    else
      c.node("Add", {scores, mask}, {masked});
  }
  if (c.attr_bool("is_causal")) {
    if (Lq < 0 || Lk < 0) c.refuse("causal attention whose sequence lengths are not known when exporting");
    Tensor limit;
    visit_dtype(t, [&]<typename T>() {
      if constexpr (std::is_floating_point_v<T>) {
        std::vector<T> d(static_cast<size_t>(Lq * Lk), T(0));
        for (int64_t i = 0; i < Lq; ++i)
          for (int64_t j = i + 1; j < Lk; ++j) d[static_cast<size_t>(i * Lk + j)] = -std::numeric_limits<T>::infinity();
        limit = Tensor::from_vector<T>(d, {Lq, Lk});
      }
    });
    if (!limit.defined()) c.refuse(fmt::format("causal attention in {}", dtype_name(t)));
    const std::string limited = c.tmp("scores_causal");
    c.node("Add", {masked, c.constant(limit, "causal_limit")}, {limited});
    masked = limited;
  }
  const std::string weights = c.tmp("weights");
  set_attr(c.node("Softmax", {masked}, {weights}), "axis", int64_t{-1});
  if (group == 1) {
    c.node("MatMul", {weights, vg}, {c.out()});
    return;
  }
  const std::string grouped = c.tmp("out_grouped");
  c.node("MatMul", {weights, vg}, {grouped});
  c.node("Reshape", {grouped, c.ints({0, H, Lq, v[3]}, "out_shape")}, {c.out()});
}

}  // namespace pd::io::onnx_export
