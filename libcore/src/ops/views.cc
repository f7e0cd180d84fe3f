// View ops: new shape/strides/offset over the same storage.
#include "pd/ops/views.h"

#include <algorithm>

#include "pd/kernels/slice_geometry.h"

namespace pd {
namespace {

Tensor view(const Tensor& x, const Shape& shape, const Shape& strides, int64_t offset) {
  return x.as_strided(shape, strides, offset);
}

// Strides for `shape` over the contiguous-compatible layout of x, or empty if no view is possible.
bool view_strides(const Tensor& x, const Shape& shape, Shape& strides) {
  if (x.is_contiguous()) {
    strides = contiguous_strides(shape);
    return true;
  }
  return false;
}

struct SliceSpec {
  Shape shape, strides;
  int64_t offset;
};

SliceSpec slice_spec(const char* op, const Tensor& x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& ends, const std::vector<int64_t>& steps) {
  PD_CHECK(axes.size() == starts.size() && axes.size() == ends.size() && (steps.empty() || steps.size() == axes.size()),
           ErrorCode::kInvalidArgument, "{}: axes, starts, ends (and steps) must have equal lengths, but received {}, {}, {}, {}",
           op, axes.size(), starts.size(), ends.size(), steps.size());
  SliceSpec s{x.shape(), x.strides(), x.offset()};
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normalize_axis(axes[i], x.dim(), op);
    int64_t step = steps.empty() ? 1 : steps[i];
    PD_CHECK(step != 0, ErrorCode::kInvalidArgument, "{}: argument 'steps' must not contain 0 (axis {})", op, axes[i]);
    int64_t first = 0, count = 0;
    kernels::normalize_slice(x.shape()[a], starts[i], ends[i], step, first, count);
    s.offset += first * x.strides()[a];
    s.shape[a] = count;
    // With one element or none the stride is never stepped: a step past the extent cannot overflow it.
    s.strides[a] = count > 1 ? x.strides()[a] * step : x.strides()[a];
  }
  return s;
}

}  // namespace

namespace views {

Tensor reshape(const char* op, In x, const std::vector<int64_t>& shape) {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      PD_CHECK(infer < 0, ErrorCode::kInvalidArgument, "{}: argument 'shape' {} has more than one -1", op, shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      PD_CHECK(out[i] >= 0, ErrorCode::kInvalidArgument, "{}: argument 'shape' {} has a negative extent", op, shape_str(shape));
      PD_CHECK(!__builtin_mul_overflow(known, out[i], &known), ErrorCode::kShape,
               "{}: argument 'shape' {} has more elements than a tensor can hold", op, shape_str(shape));
    }
  }
  const int64_t n = x.t.numel();
  if (infer >= 0) {
    PD_CHECK(known != 0 && n % known == 0, ErrorCode::kShape,
             "{}: cannot reshape '{}' of shape {} ({} elements) into {}", op, x.name, shape_str(x.t.shape()), n, shape_str(shape));
    out[infer] = n / known;
  }
  PD_CHECK(shape_numel(out) == n, ErrorCode::kShape, "{}: cannot reshape '{}' of shape {} ({} elements) into {} ({} elements)",
           op, x.name, shape_str(x.t.shape()), n, shape_str(shape), shape_numel(out));
  Shape strides;
  if (view_strides(x.t, out, strides)) return view(x.t, out, strides, x.t.offset());
  Tensor c = x.t.contiguous();
  return view(c, out, contiguous_strides(out), c.offset());
}

Tensor transpose(const char* op, In x, const std::vector<int64_t>& perm) {
  const int64_t nd = x.t.dim();
  PD_CHECK(static_cast<int64_t>(perm.size()) == nd, ErrorCode::kInvalidArgument,
           "{}: argument 'perm' {} must list each of the {} axes of '{}' once", op, shape_str(perm), nd, x.name);
  std::vector<bool> seen(nd, false);
  Shape shape(nd), strides(nd);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t a = normalize_axis(perm[i], nd, op);
    PD_CHECK(!seen[a], ErrorCode::kInvalidArgument, "{}: argument 'perm' {} repeats axis {}", op, shape_str(perm), a);
    seen[a] = true;
    shape[i] = x.t.shape()[a];
    strides[i] = x.t.strides()[a];
  }
  return view(x.t, shape, strides, x.t.offset());
}

Tensor flatten(const char* op, In x, int64_t start_axis, int64_t stop_axis) {
  if (x.t.dim() == 0) return reshape(op, x, {1});
  int64_t s = normalize_axis(start_axis, x.t.dim(), op), e = normalize_axis(stop_axis, x.t.dim(), op);
  PD_CHECK(s <= e, ErrorCode::kInvalidArgument, "{}: start_axis {} must not come after stop_axis {}", op, start_axis, stop_axis);
  Shape out(x.t.shape().begin(), x.t.shape().begin() + s);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= x.t.shape()[i];
  out.push_back(merged);
  out.insert(out.end(), x.t.shape().begin() + e + 1, x.t.shape().end());
  return reshape(op, x, out);
}

Tensor squeeze(const char* op, In x, const std::vector<int64_t>& axis) {
  std::vector<bool> drop(x.t.dim(), false);
  if (axis.empty()) {
    for (int64_t i = 0; i < x.t.dim(); ++i) drop[i] = x.t.shape()[i] == 1;
  }
  for (int64_t a : axis) {
    int64_t n = normalize_axis(a, x.t.dim(), op);
    PD_CHECK(x.t.shape()[n] == 1, ErrorCode::kShape, "{}: axis {} of '{}' {} has extent {}, but only extent-1 axes can be squeezed",
             op, a, x.name, shape_str(x.t.shape()), x.t.shape()[n]);
    drop[n] = true;
  }
  Shape shape, strides;
  for (int64_t i = 0; i < x.t.dim(); ++i)
    if (!drop[i]) {
      shape.push_back(x.t.shape()[i]);
      strides.push_back(x.t.strides()[i]);
    }
  return view(x.t, shape, strides, x.t.offset());
}

Tensor unsqueeze(const char* op, In x, const std::vector<int64_t>& axis) {
  const int64_t nd = x.t.dim() + static_cast<int64_t>(axis.size());
  std::vector<bool> inserted(nd, false);
  for (int64_t a : axis) {
    int64_t n = normalize_axis(a, nd, op);
    PD_CHECK(!inserted[n], ErrorCode::kInvalidArgument, "{}: argument 'axis' {} repeats axis {}", op, shape_str(axis), a);
    inserted[n] = true;
  }
  Shape shape, strides;
  int64_t src = 0;
  for (int64_t i = 0; i < nd; ++i) {
    if (inserted[i]) {
      shape.push_back(1);
      strides.push_back(1);
    } else {
      shape.push_back(x.t.shape()[src]);
      strides.push_back(x.t.strides()[src]);
      ++src;
    }
  }
  return view(x.t, shape, strides, x.t.offset());
}

Tensor expand(const char* op, In x, const std::vector<int64_t>& shape) {
  const int64_t nd = static_cast<int64_t>(shape.size()), xd = x.t.dim();
  PD_CHECK(nd >= xd, ErrorCode::kShape, "{}: cannot expand '{}' of shape {} to fewer dimensions {}", op, x.name,
           shape_str(x.t.shape()), shape_str(shape));
  Shape out(nd), strides(nd);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t src = i - (nd - xd);
    int64_t have = src >= 0 ? x.t.shape()[src] : 1;
    int64_t want = shape[i] == -1 ? have : shape[i];
    PD_CHECK(have == want || have == 1, ErrorCode::kShape,
             "{}: cannot expand '{}' of shape {} to {}: axis {} has extent {} (only extent-1 axes expand)", op, x.name,
             shape_str(x.t.shape()), shape_str(shape), i, have);
    out[i] = want;
    strides[i] = (src >= 0 && have == want) ? x.t.strides()[src] : 0;
  }
  return view(x.t, out, strides, x.t.offset());
}

Tensor slice(const char* op, In x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
             const std::vector<int64_t>& ends, const std::vector<int64_t>& steps) {
  SliceSpec s = slice_spec(op, x.t, axes, starts, ends, steps);
  return view(x.t, s.shape, s.strides, s.offset);
}

Tensor broadcast_reduced(const char* op, In x, const std::vector<int64_t>& shape, const std::vector<int64_t>& axis,
                         bool keepdim) {
  Tensor probe = Tensor::empty({0}, x.t.dtype()).as_strided(shape, contiguous_strides(shape), 0);
  Shape kept = infer::reduce(op, In{"shape", probe}, axis, true);
  PD_CHECK(x.t.numel() == shape_numel(kept), ErrorCode::kShape,
           "{}: argument '{}' of shape {} is not a reduction of shape {} over axes {}", op, x.name, shape_str(x.t.shape()),
           shape_str(shape), shape_str(axis));
  Tensor k = reshape(op, x, kept);
  return expand(op, In{x.name, k}, shape);
}

}  // namespace views

namespace infer {

Shape slice_grad(const char* op, In grad, const std::vector<int64_t>& input_shape, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& ends, const std::vector<int64_t>& steps) {
  Tensor probe = Tensor::empty({0}, grad.t.dtype()).as_strided(input_shape, contiguous_strides(input_shape), 0);
  SliceSpec s = slice_spec(op, probe, axes, starts, ends, steps);
  PD_CHECK(grad.t.shape() == s.shape, ErrorCode::kShape, "{}: argument '{}' must have the sliced shape {}, but received {}", op,
           grad.name, shape_str(s.shape), shape_str(grad.t.shape()));
  return input_shape;
}

}  // namespace infer
}  // namespace pd
