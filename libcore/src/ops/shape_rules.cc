// Shape rules. Messages follow one pattern: "OP: argument 'ARG' must ..., but received ...".
#include "pd/ops/shape_rules.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "pd/kernels/elementwise_expr.h"
#include "shape_checks.h"

namespace pd::infer {
namespace {

Shape broadcast_two(const char* op, const char* an, const Shape& a, const char* bn, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    PD_CHECK(da == db || da == 1 || db == 1, ErrorCode::kShape,
             "{}: cannot broadcast argument '{}' of shape {} with argument '{}' of shape {} (axis {}: {} vs {})", op, an,
             shape_str(a), bn, shape_str(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<bool> reduced_axes(const char* op, const Tensor& x, const std::vector<int64_t>& axis) {
  const int64_t nd = x.dim();
  std::vector<bool> r(nd, axis.empty());
  for (int64_t a : axis) {
    int64_t n = normalize_axis(a, nd, op);
    if (nd == 0) continue;
    PD_CHECK(!r[n] || axis.empty(), ErrorCode::kInvalidArgument, "{}: argument 'axis' lists axis {} twice in {}", op, a,
             shape_str(axis));
    r[n] = true;
  }
  return r;
}

// A tensor that carries only a shape, so that grad rules can reuse the forward rules.
Tensor shape_only(const Shape& shape, DType dtype) {
  return Tensor::empty({0}, dtype).as_strided(shape, contiguous_strides(shape), 0);
}

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  int64_t span = in + 2 * p - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;  // the last window must start inside the input
  return out;
}

}  // namespace

Shape same_as(const char*, In x) { return x.t.shape(); }

Shape clip_range(const char* op, In x, double min, double max) {
  PD_CHECK(min <= max, ErrorCode::kInvalidArgument, "{}: argument 'min' must be <= 'max' ({}), but received {}", op,
           max, min);
  return x.t.shape();
}

Shape same_shapes(const char* op, In a, In b) {
  PD_CHECK(a.t.shape() == b.t.shape(), ErrorCode::kShape, "{}: argument '{}' must have the shape of '{}' {}, but received {}",
           op, b.name, a.name, shape_str(a.t.shape()), shape_str(b.t.shape()));
  return a.t.shape();
}

Shape same_shapes(const char* op, In a, In b, In c) {
  same_shapes(op, a, b);
  return same_shapes(op, a, c);
}

Shape adam_step(const char* op, In param, In grad, In m, In v, int64_t step) {
  PD_CHECK(step >= 1, ErrorCode::kInvalidArgument, "{}: argument 'step' counts from 1, but received {}", op, step);
  same_shapes(op, param, grad, m);
  return same_shapes(op, param, v);
}

Shape broadcast(const char* op, In a, In b) { return broadcast_two(op, a.name, a.t.shape(), b.name, b.t.shape()); }

Shape broadcast(const char* op, In a, In b, In c) {
  Shape ab = broadcast_two(op, a.name, a.t.shape(), b.name, b.t.shape());
  return broadcast_two(op, "(broadcast of the others)", ab, c.name, c.t.shape());
}

Shape from_shape(const char* op, const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    PD_CHECK(d >= 0, ErrorCode::kShape, "{}: argument 'shape' must have non-negative extents, but received {}", op,
             shape_str(shape));
  shape_numel(shape);
  return shape;
}

Shape arange(const char* op, double start, double end, double step) {
  PD_CHECK(step != 0, ErrorCode::kInvalidArgument, "{}: argument 'step' must be non-zero", op);
  const double n = std::ceil((end - start) / step);
  PD_CHECK(std::isfinite(n) && n <= static_cast<double>(kMaxNumel), ErrorCode::kShape,
           "{}: start {}, end {} and step {} give {} elements, more than a tensor can hold", op, start, end, step, n);
  return {n > 0 ? static_cast<int64_t>(n) : 0};
}

Shape reduce(const char* op, In x, const std::vector<int64_t>& axis, bool keepdim) {
  std::vector<bool> r = reduced_axes(op, x.t, axis);
  Shape out;
  for (int64_t i = 0; i < x.t.dim(); ++i) {
    if (!r[i]) out.push_back(x.t.shape()[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

Shape reduce_nonempty(const char* op, In x, const std::vector<int64_t>& axis, bool keepdim) {
  std::vector<bool> r = reduced_axes(op, x.t, axis);
  for (int64_t i = 0; i < x.t.dim(); ++i)
    PD_CHECK(!r[i] || x.t.shape()[i] > 0, ErrorCode::kShape,
             "{}: cannot reduce over empty axis {} of argument '{}' with shape {} (the result is undefined)", op, i, x.name,
             shape_str(x.t.shape()));
  return reduce(op, x, axis, keepdim);
}

Shape reduce_mask(const char* op, In x, In out, const std::vector<int64_t>& axis, bool keepdim) {
  Shape r = reduce(op, x, axis, keepdim);
  PD_CHECK(shape_numel(r) == out.t.numel(), ErrorCode::kShape, "{}: argument '{}' must have the reduced shape {}, but received {}",
           op, out.name, shape_str(r), shape_str(out.t.shape()));
  return x.t.shape();
}

Shape sum_to(const char* op, In x, const std::vector<int64_t>& shape) {
  const Shape& s = x.t.shape();
  bool ok = shape.size() <= s.size();
  for (size_t i = 0; ok && i < shape.size(); ++i) {
    int64_t d = s[s.size() - shape.size() + i];
    ok = shape[i] == d || shape[i] == 1;
  }
  PD_CHECK(ok, ErrorCode::kShape, "{}: shape {} does not broadcast to argument '{}' of shape {}, so sum_to cannot reduce to it", op,
           shape_str(shape), x.name, shape_str(s));
  return shape;
}

Shape matmul_operand(const Shape& s, bool transpose, bool is_y) {
  if (s.size() != 1) return s;
  return transpose != is_y ? Shape{s[0], 1} : Shape{1, s[0]};
}

// NumPy / PyTorch semantics for 1-D operands: x [K] is a row [1, K] and y [K] a column [K, 1], and the
// added axis is dropped from the result (so two vectors give a 0-D dot product). Transposing a 1-D
// operand changes nothing.
Shape matmul(const char* op, In x, In y, bool tx, bool ty) {
  PD_CHECK(x.t.dim() >= 1 && y.t.dim() >= 1, ErrorCode::kShape,
           "{}: arguments must be at least 1-D, but received '{}' {} and '{}' {}", op, x.name, shape_str(x.t.shape()), y.name,
           shape_str(y.t.shape()));
  if (x.t.dim() == 1 || y.t.dim() == 1) {
    Shape out = matmul_as_matrices(op, x, y, tx, ty);
    if (y.t.dim() == 1) out.pop_back();
    if (x.t.dim() == 1) out.erase(out.end() - 1 - (y.t.dim() == 1 ? 0 : 1));
    return out;
  }
  return matmul_as_matrices(op, x, y, tx, ty);
}

Shape matmul_as_matrices(const char* op, In x, In y, bool tx, bool ty) {
  const Shape a = matmul_operand(x.t.shape(), tx, false);
  const Shape b = matmul_operand(y.t.shape(), ty, true);
  int64_t m = tx ? a[a.size() - 1] : a[a.size() - 2], ka = tx ? a[a.size() - 2] : a[a.size() - 1];
  int64_t kb = ty ? b[b.size() - 1] : b[b.size() - 2], n = ty ? b[b.size() - 2] : b[b.size() - 1];
  PD_CHECK(ka == kb, ErrorCode::kShape,
           "{}: inner dimensions differ: '{}' {} gives K={} but '{}' {} gives K={} (transpose_x={}, transpose_y={})", op,
           x.name, shape_str(a), ka, y.name, shape_str(b), kb, tx, ty);
  Shape out = broadcast_two(op, x.name, Shape(a.begin(), a.end() - 2), y.name, Shape(b.begin(), b.end() - 2));
  out.push_back(m);
  out.push_back(n);
  return out;
}

Shape linear(const char* op, In x, In weight, In bias) {
  PD_CHECK(x.t.dim() >= 2, ErrorCode::kShape, "{}: argument '{}' must be at least 2-D [..., in_features], but received {}",
           op, x.name, shape_str(x.t.shape()));
  check_rank(op, weight, 2, "[out_features, in_features]");
  PD_CHECK(weight.t.shape()[1] == x.t.shape().back(), ErrorCode::kShape,
           "{}: in_features differ: '{}' has {} (shape {}) but '{}' has {} (shape {})", op, x.name, x.t.shape().back(),
           shape_str(x.t.shape()), weight.name, weight.t.shape()[1], shape_str(weight.t.shape()));
  if (bias.t.defined())
    PD_CHECK(bias.t.shape() == Shape{weight.t.shape()[0]}, ErrorCode::kShape,
             "{}: argument '{}' must have shape [{}] (out_features), but received {}", op, bias.name, weight.t.shape()[0],
             shape_str(bias.t.shape()));
  Shape out = x.t.shape();
  out.back() = weight.t.shape()[0];
  return out;
}

Shape conv2d(const char* op, In x, In weight, In bias, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, bool channels_last) {
  check_rank(op, x, 4, channels_last ? "[N, H, W, C] (channels_last)" : "[N, C, H, W]");
  if (!channels_last) return conv2d_nchw(op, x.name, x.t.shape(), weight, bias, stride, padding, dilation, groups);
  const Shape& s = x.t.shape();
  const Shape out = conv2d_nchw(op, x.name, {s[0], s[3], s[1], s[2]}, weight, bias, stride, padding, dilation, groups);
  return {out[0], out[2], out[3], out[1]};
}

Shape conv2d_nchw(const char* op, const char* x_name, const Shape& xs, In weight, In bias, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  check_rank(op, weight, 4, "[C_out, C_in / groups, kH, kW]");
  check_pair(op, "stride", stride, 1);
  check_pair(op, "padding", padding, 0);
  check_pair(op, "dilation", dilation, 1);
  const Shape& ws = weight.t.shape();
  PD_CHECK(groups >= 1 && groups <= kMaxWindowAttr && xs[1] % groups == 0 && ws[0] % groups == 0, ErrorCode::kInvalidArgument,
           "{}: argument 'groups' = {} must divide the input channels {} and output channels {}", op, groups, xs[1], ws[0]);
  PD_CHECK(ws[1] * groups == xs[1], ErrorCode::kShape,
           "{}: input channels differ: '{}' {} has {} channels but '{}' {} expects {} (= {} per group x {} groups)", op,
           x_name, shape_str(xs), xs[1], weight.name, shape_str(ws), ws[1] * groups, ws[1], groups);
  if (bias.t.defined())
    PD_CHECK(bias.t.shape() == Shape{ws[0]}, ErrorCode::kShape, "{}: argument '{}' must have shape [{}], but received {}", op,
             bias.name, ws[0], shape_str(bias.t.shape()));
  int64_t oh = conv_out(xs[2], ws[2], stride[0], padding[0], dilation[0]);
  int64_t ow = conv_out(xs[3], ws[3], stride[1], padding[1], dilation[1]);
  PD_CHECK(oh > 0 && ow > 0, ErrorCode::kShape,
           "{}: the (dilated) kernel {}x{} is larger than the padded input {}x{}", op, dilation[0] * (ws[2] - 1) + 1,
           dilation[1] * (ws[3] - 1) + 1, xs[2] + 2 * padding[0], xs[3] + 2 * padding[1]);
  return {xs[0], ws[0], oh, ow};
}

Shape winograd_weight(const char* op, In weight) {
  check_rank(op, weight, 4, "[C_out, C_in, 3, 3]");
  const Shape& ws = weight.t.shape();
  PD_CHECK(ws[2] == 3 && ws[3] == 3, ErrorCode::kShape, "{}: argument '{}' must be a [C_out, C_in, 3, 3] kernel, but received {}",
           op, weight.name, shape_str(ws));
  return {36, ws[1], ws[0]};
}

Shape winograd_conv2d(const char* op, In x, In weight, In bias, In residual, const std::vector<int64_t>& padding,
                      int64_t block) {
  PD_CHECK(block == 0 || (block > 0 && block % 8 == 0), ErrorCode::kInvalidArgument,
           "{}: argument 'block' = {} must be 0 (plain [N, C, H, W]) or a multiple of 8 (channel blocks)", op, block);
  if (block > 0)
    PD_CHECK(x.t.dim() == 5 && x.t.shape()[4] == block, ErrorCode::kShape,
             "{}: argument '{}' must be 5-D channel blocks [N, C / {}, H, W, {}], but received {}", op, x.name, block, block,
             shape_str(x.t.shape()));
  else
    check_rank(op, x, 4, "[N, C, H, W]");
  check_rank(op, weight, 3, "[36, C_in, C_out] (from winograd_weight)");
  check_pair(op, "padding", padding, 0);
  const Shape& xb = x.t.shape();
  const Shape xs = block > 0 ? Shape{xb[0], xb[1] * block, xb[2], xb[3]} : xb;
  const Shape& ws = weight.t.shape();
  PD_CHECK(ws[0] == 36, ErrorCode::kShape, "{}: argument '{}' must have 36 transform points first, [36, C_in, C_out], but received {}",
           op, weight.name, shape_str(ws));
  PD_CHECK(ws[1] == xs[1], ErrorCode::kShape, "{}: input channels differ: '{}' {} has {} channels but '{}' {} expects {}", op,
           x.name, shape_str(xb), xs[1], weight.name, shape_str(ws), ws[1]);
  if (bias.t.defined())
    PD_CHECK(bias.t.shape() == Shape{ws[2]}, ErrorCode::kShape, "{}: argument '{}' must have shape [{}], but received {}", op,
             bias.name, ws[2], shape_str(bias.t.shape()));
  if (block > 0)
    PD_CHECK(ws[2] % block == 0, ErrorCode::kShape, "{}: the output channels {} of '{}' {} must be a multiple of the block {}", op,
             ws[2], weight.name, shape_str(ws), block);
  const int64_t oh = conv_out(xs[2], 3, 1, padding[0], 1), ow = conv_out(xs[3], 3, 1, padding[1], 1);
  PD_CHECK(oh > 0 && ow > 0, ErrorCode::kShape, "{}: the 3x3 kernel is larger than the padded input {}x{}", op,
           xs[2] + 2 * padding[0], xs[3] + 2 * padding[1]);
  const Shape out = block > 0 ? Shape{xs[0], ws[2] / block, oh, ow, block} : Shape{xs[0], ws[2], oh, ow};
  if (residual.t.defined())
    PD_CHECK(residual.t.shape() == out, ErrorCode::kShape,
             "{}: argument '{}' must have the convolution's output shape {}, but received {}", op, residual.name,
             shape_str(out), shape_str(residual.t.shape()));
  return out;
}

Shape conv2d_grad_input(const char* op, In grad, In weight, const std::vector<int64_t>& input_shape,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& dilation, int64_t groups, bool channels_last) {
  PD_CHECK(input_shape.size() == 4, ErrorCode::kShape, "{}: argument 'input_shape' must have 4 extents, but received {}",
           op, shape_str(input_shape));
  Tensor x = shape_only(input_shape, weight.t.dtype());
  Shape expect = conv2d(op, In{"input", x}, weight, In{"bias", Tensor()}, stride, padding, dilation, groups, channels_last);
  PD_CHECK(grad.t.shape() == expect, ErrorCode::kShape, "{}: argument '{}' must have shape {}, but received {}", op, grad.name,
           shape_str(expect), shape_str(grad.t.shape()));
  return input_shape;
}

Shape conv2d_grad_weight(const char* op, In grad, In x, const std::vector<int64_t>& weight_shape,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& dilation, int64_t groups, bool channels_last) {
  PD_CHECK(weight_shape.size() == 4, ErrorCode::kShape, "{}: argument 'weight_shape' must have 4 extents, but received {}",
           op, shape_str(weight_shape));
  Tensor w = shape_only(weight_shape, x.t.dtype());
  Shape expect = conv2d(op, x, In{"weight", w}, In{"bias", Tensor()}, stride, padding, dilation, groups, channels_last);
  PD_CHECK(grad.t.shape() == expect, ErrorCode::kShape, "{}: argument '{}' must have shape {}, but received {}", op, grad.name,
           shape_str(expect), shape_str(grad.t.shape()));
  return weight_shape;
}

namespace {

// max/avg pooling's rule; `prefix` names the attributes in messages ("pool_" for fused_conv2d_maxpool).
}  // namespace

Shape pool2d_shape(const char* op, const char* x_name, const Shape& xs, const std::vector<int64_t>& kernel_size,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode, bool pool_prefix) {
  const char* k_name = pool_prefix ? "pool_kernel_size" : "kernel_size";
  const char* s_name = pool_prefix ? "pool_stride" : "stride";
  const char* p_name = pool_prefix ? "pool_padding" : "padding";
  PD_CHECK(xs.size() == 4, ErrorCode::kShape, "{}: argument '{}' must be 4-D [N, C, H, W], but received shape {}", op, x_name,
           shape_str(xs));
  check_pair(op, k_name, kernel_size, 1);
  const std::vector<int64_t>& s = stride.empty() ? kernel_size : stride;
  check_pair(op, s_name, s, 1);
  check_pair(op, p_name, padding, 0);
  PD_CHECK(padding[0] * 2 <= kernel_size[0] && padding[1] * 2 <= kernel_size[1], ErrorCode::kInvalidArgument,
           "{}: argument '{}' {} must be at most half of {} {}", op, p_name, shape_str(padding), k_name,
           shape_str(kernel_size));
  int64_t oh = pool_out(xs[2], kernel_size[0], s[0], padding[0], ceil_mode);
  int64_t ow = pool_out(xs[3], kernel_size[1], s[1], padding[1], ceil_mode);
  // (pool_out's division truncates toward zero, so a window larger than the input would still give 1.)
  const bool fits = xs[2] + 2 * padding[0] >= kernel_size[0] && xs[3] + 2 * padding[1] >= kernel_size[1];
  PD_CHECK(fits && oh > 0 && ow > 0, ErrorCode::kShape, "{}: {} {} is larger than the padded input {}x{}", op, k_name,
           shape_str(kernel_size), xs[2] + 2 * padding[0], xs[3] + 2 * padding[1]);
  return {xs[0], xs[1], oh, ow};
}

Shape pool2d(const char* op, In x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, bool ceil_mode) {
  return pool2d_shape(op, x.name, x.t.shape(), kernel_size, stride, padding, ceil_mode, /*pool_prefix=*/false);
}

Shape conv2d_pool2d(const char* op, In x, In weight, In bias, const std::vector<int64_t>& stride,
                    const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                    const std::vector<int64_t>& pool_kernel_size,
                    const std::vector<int64_t>& pool_stride, const std::vector<int64_t>& pool_padding,
                    bool pool_ceil_mode) {
  const Shape conv = conv2d(op, x, weight, bias, stride, padding, dilation, groups);
  return pool2d_shape(op, "convolution output", conv, pool_kernel_size, pool_stride, pool_padding, pool_ceil_mode,
                      /*pool_prefix=*/true);
}

Shape pool2d_grad(const char* op, In grad, const std::vector<int64_t>& input_shape, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode) {
  PD_CHECK(input_shape.size() == 4, ErrorCode::kShape, "{}: argument 'input_shape' must have 4 extents, but received {}", op,
           shape_str(input_shape));
  Tensor x = shape_only(input_shape, grad.t.dtype());
  Shape expect = pool2d(op, In{"input", x}, kernel_size, stride, padding, ceil_mode);
  PD_CHECK(grad.t.shape() == expect, ErrorCode::kShape, "{}: argument '{}' must have shape {}, but received {}", op, grad.name,
           shape_str(expect), shape_str(grad.t.shape()));
  return input_shape;
}

Shape pool2d_input(const char* op, In x, In grad, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                   const std::vector<int64_t>& padding, bool ceil_mode) {
  return pool2d_grad(op, grad, x.t.shape(), kernel_size, stride, padding, ceil_mode);
}

Shape adaptive_pool2d(const char* op, In x, const std::vector<int64_t>& output_size) {
  check_rank(op, x, 4, "[N, C, H, W]");
  check_pair(op, "output_size", output_size, 1);
  return {x.t.shape()[0], x.t.shape()[1], output_size[0], output_size[1]};
}

Shape adaptive_pool2d_grad(const char* op, In grad, const std::vector<int64_t>& input_shape) {
  check_rank(op, grad, 4, "[N, C, oH, oW]");
  PD_CHECK(input_shape.size() == 4 && input_shape[0] == grad.t.shape()[0] && input_shape[1] == grad.t.shape()[1],
           ErrorCode::kShape, "{}: argument 'input_shape' {} does not match '{}' {}", op, shape_str(input_shape), grad.name,
           shape_str(grad.t.shape()));
  return input_shape;
}

Shape embedding(const char* op, In x, In weight) {
  check_rank(op, weight, 2, "[num_embeddings, dim]");
  Shape out = x.t.shape();
  out.push_back(weight.t.shape()[1]);
  return out;
}

Shape embedding_grad(const char* op, In x, In grad, const std::vector<int64_t>& weight_shape) {
  PD_CHECK(weight_shape.size() == 2, ErrorCode::kShape, "{}: argument 'weight_shape' must have 2 extents, but received {}", op,
           shape_str(weight_shape));
  Shape expect = x.t.shape();
  expect.push_back(weight_shape[1]);
  PD_CHECK(grad.t.shape() == expect, ErrorCode::kShape, "{}: argument '{}' must have shape {}, but received {}", op, grad.name,
           shape_str(expect), shape_str(grad.t.shape()));
  return weight_shape;
}

Shape concat(const char* op, InList xs, int64_t axis) {
  const Shape& first = xs.ts[0].shape();
  int64_t a = normalize_axis(axis, static_cast<int64_t>(first.size()), op);
  Shape out = first;
  out[a] = 0;
  for (size_t i = 0; i < xs.ts.size(); ++i) {
    const Shape& s = xs.ts[i].shape();
    bool ok = s.size() == first.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int64_t>(d) == a || s[d] == first[d];
    PD_CHECK(ok, ErrorCode::kShape, "{}: argument '{}[{}]' has shape {}, which does not match '{}[0]' {} outside axis {}", op,
             xs.name, i, shape_str(s), xs.name, shape_str(first), a);
    out[a] += s[a];
  }
  return out;
}

Shape elementwise(const char* op, InList xs, const std::string& expr) {
  ewise::parse(op, expr, static_cast<int>(xs.ts.size()));
  Shape out = xs.ts[0].shape();
  for (size_t i = 1; i < xs.ts.size(); ++i) {
    const std::string name = fmt::format("{}[{}]", xs.name, i);
    out = broadcast_two(op, "(broadcast of the ones before)", out, name.c_str(), xs.ts[i].shape());
  }
  return out;
}

std::vector<Shape> split(const char* op, In x, const std::vector<int64_t>& sections, int64_t axis) {
  int64_t a = normalize_axis(axis, x.t.dim(), op);
  int64_t n = x.t.shape()[a];
  std::vector<int64_t> sizes;
  PD_CHECK(!sections.empty(), ErrorCode::kInvalidArgument, "{}: argument 'sections' must not be empty", op);
  if (sections.size() == 1) {
    int64_t parts = sections[0];
    PD_CHECK(parts > 0 && n % parts == 0, ErrorCode::kInvalidArgument,
             "{}: {} equal sections must divide axis {} of extent {} exactly", op, parts, a, n);
    sizes.assign(parts, n / parts);
  } else {
    int64_t known = 0, unknown = -1;
    for (size_t i = 0; i < sections.size(); ++i) {
      if (sections[i] == -1) {
        PD_CHECK(unknown < 0, ErrorCode::kInvalidArgument, "{}: argument 'sections' {} has more than one -1", op,
                 shape_str(sections));
        unknown = static_cast<int64_t>(i);
      } else {
        PD_CHECK(sections[i] >= 0, ErrorCode::kInvalidArgument, "{}: argument 'sections' {} has a negative size", op,
                 shape_str(sections));
        known += sections[i];
      }
    }
    sizes = sections;
    if (unknown >= 0) sizes[unknown] = n - known;
    PD_CHECK(known <= n && (unknown >= 0 || known == n), ErrorCode::kInvalidArgument,
             "{}: sections {} must add up to the extent {} of axis {}", op, shape_str(sections), n, a);
  }
  std::vector<Shape> out;
  for (int64_t s : sizes) {
    Shape sh = x.t.shape();
    sh[a] = s;
    out.push_back(sh);
  }
  return out;
}

Shape pad(const char* op, In x, const std::vector<int64_t>& pads) {
  PD_CHECK(pads.size() % 2 == 0 && static_cast<int64_t>(pads.size()) <= 2 * x.t.dim(), ErrorCode::kInvalidArgument,
           "{}: argument 'pads' must hold (lo, hi) pairs for at most {} axes, but received {}", op, x.t.dim(), shape_str(pads));
  Shape out = x.t.shape();
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    int64_t d = x.t.dim() - 1 - static_cast<int64_t>(i);
    int64_t grow = 0;
    PD_CHECK(!__builtin_add_overflow(pads[2 * i], pads[2 * i + 1], &grow) && !__builtin_add_overflow(out[d], grow, &out[d]) &&
                 out[d] <= kMaxNumel,
             ErrorCode::kShape, "{}: argument 'pads' {} makes axis {} larger than a tensor can hold", op, shape_str(pads), d);
    PD_CHECK(out[d] >= 0, ErrorCode::kInvalidArgument, "{}: argument 'pads' {} crops axis {} of extent {} below zero", op,
             shape_str(pads), d, x.t.shape()[d]);
  }
  return out;
}

}  // namespace pd::infer
