// Shape rules of the indexing, sorting, scan and layout ops (gather, take_along_axis, topk, stack,
// tile...). Index values are checked by the kernels: a shape rule sees shapes only.
#include <fmt/ranges.h>

#include "pd/ops/op_support.h"
#include "pd/ops/shape_rules.h"

namespace pd::infer {
namespace {

// index has x's rank and x's extents outside `axis` (axis already normalized).
void check_along_axis(const char* op, In x, In index, int64_t axis) {
  const Shape& xs = x.t.shape();
  const Shape& is = index.t.shape();
  PD_CHECK(is.size() == xs.size(), ErrorCode::kShape,
           "{}: argument '{}' must have the rank of '{}' ({}-D {}), but received shape {}", op, index.name, x.name,
           xs.size(), shape_str(xs), shape_str(is));
  for (size_t d = 0; d < xs.size(); ++d)
    PD_CHECK(static_cast<int64_t>(d) == axis || is[d] == xs[d], ErrorCode::kShape,
             "{}: argument '{}' {} must match '{}' {} outside axis {} (axis {}: {} vs {})", op, index.name, shape_str(is),
             x.name, shape_str(xs), axis, d, is[d], xs[d]);
}

}  // namespace

Shape gather(const char* op, In x, In index, int64_t axis) {
  PD_CHECK(x.t.dim() >= 1, ErrorCode::kShape, "{}: argument '{}' must be at least 1-D, but received a 0-D tensor", op, x.name);
  const int64_t a = normalize_axis(axis, x.t.dim(), op);
  const Shape& xs = x.t.shape();
  Shape out(xs.begin(), xs.begin() + a);
  out.insert(out.end(), index.t.shape().begin(), index.t.shape().end());
  out.insert(out.end(), xs.begin() + a + 1, xs.end());
  return out;
}

Shape index_select(const char* op, In x, In index, int64_t axis) {
  PD_CHECK(index.t.dim() == 1, ErrorCode::kShape, "{}: argument '{}' must be 1-D, but received shape {}", op, index.name,
           shape_str(index.t.shape()));
  return gather(op, x, index, axis);
}

Shape gather_grad(const char* op, In index, In grad, const std::vector<int64_t>& input_shape, int64_t axis) {
  const Tensor x = detail::shape_only(input_shape, grad.t.dtype());
  const Shape expect = gather(op, In{"input_shape", x}, index, axis);
  PD_CHECK(grad.t.shape() == expect, ErrorCode::kShape, "{}: argument '{}' must have shape {}, but received {}", op, grad.name,
           shape_str(expect), shape_str(grad.t.shape()));
  return input_shape;
}

Shape take_along_axis(const char* op, In x, In index, int64_t axis) {
  check_along_axis(op, x, index, normalize_axis(axis, x.t.dim(), op));
  return index.t.shape();
}

Shape scatter_add(const char* op, In x, In index, In src, int64_t axis) {
  check_along_axis(op, x, index, normalize_axis(axis, x.t.dim(), op));
  PD_CHECK(src.t.shape() == index.t.shape(), ErrorCode::kShape,
           "{}: argument '{}' must have the shape of '{}' {}, but received {}", op, src.name, index.name,
           shape_str(index.t.shape()), shape_str(src.t.shape()));
  return x.t.shape();
}

Shape along_axis(const char* op, In x, int64_t axis) {
  normalize_axis(axis, x.t.dim(), op);
  return x.t.shape();
}

Shape topk(const char* op, In x, int64_t k, int64_t axis) {
  const int64_t a = normalize_axis(axis, x.t.dim(), op);
  const int64_t n = x.t.dim() == 0 ? 1 : x.t.shape()[a];
  PD_CHECK(k >= 0 && k <= n, ErrorCode::kOutOfRange,
           "{}: argument 'k' = {} must be in [0, {}], the extent of axis {} of '{}' {}", op, k, n, a, x.name,
           shape_str(x.t.shape()));
  Shape out = x.t.shape();
  if (!out.empty()) out[a] = k;
  return out;
}

Shape matrices(const char* op, In x) {
  PD_CHECK(x.t.dim() >= 2, ErrorCode::kShape, "{}: argument '{}' must be at least 2-D [..., M, N], but received shape {}", op,
           x.name, shape_str(x.t.shape()));
  return x.t.shape();
}

Shape one_hot(const char* op, In x, int64_t num_classes) {
  PD_CHECK(num_classes >= 1, ErrorCode::kInvalidArgument, "{}: argument 'num_classes' must be at least 1, but received {}", op,
           num_classes);
  Shape out = x.t.shape();
  out.push_back(num_classes);
  return out;
}

Shape stack(const char* op, InList xs, int64_t axis) {
  PD_CHECK(!xs.ts.empty(), ErrorCode::kInvalidArgument, "{}: argument '{}' must hold at least one tensor", op, xs.name);
  const Shape& first = xs.ts[0].shape();
  const int64_t a = normalize_axis(axis, static_cast<int64_t>(first.size()) + 1, op);
  for (size_t i = 1; i < xs.ts.size(); ++i)
    PD_CHECK(xs.ts[i].shape() == first, ErrorCode::kShape, "{}: argument '{}[{}]' has shape {}, but '{}[0]' has {}", op,
             xs.name, i, shape_str(xs.ts[i].shape()), xs.name, shape_str(first));
  Shape out = first;
  out.insert(out.begin() + a, static_cast<int64_t>(xs.ts.size()));
  return out;
}

std::vector<Shape> unbind(const char* op, In x, int64_t axis) {
  PD_CHECK(x.t.dim() >= 1, ErrorCode::kShape, "{}: argument '{}' must be at least 1-D, but received a 0-D tensor", op, x.name);
  const int64_t a = normalize_axis(axis, x.t.dim(), op);
  Shape part = x.t.shape();
  part.erase(part.begin() + a);
  return std::vector<Shape>(static_cast<size_t>(x.t.shape()[a]), part);
}

Shape tile(const char* op, In x, const std::vector<int64_t>& repeats) {
  for (int64_t r : repeats)
    PD_CHECK(r >= 0, ErrorCode::kInvalidArgument, "{}: argument 'repeats' must not be negative, but received {}", op,
             shape_str(repeats));
  const Shape& xs = x.t.shape();
  const size_t n = std::max(xs.size(), repeats.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t r = i < n - repeats.size() ? 1 : repeats[i - (n - repeats.size())];
    const int64_t s = i < n - xs.size() ? 1 : xs[i - (n - xs.size())];
    PD_CHECK(!__builtin_mul_overflow(r, s, &out[i]), ErrorCode::kShape,
             "{}: argument 'repeats' {} makes axis {} larger than a tensor can hold", op, shape_str(repeats), i);
  }
  shape_numel(out);
  return out;
}

}  // namespace pd::infer
