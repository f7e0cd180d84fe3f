#include "pd/ops/op_support.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/allocator.h"
#include "pd/core/threads.h"
#include "pd/ops/shape_rules.h"

namespace pd {

double builtin_numel_ratio(const Shape& a, const Shape& b) {
  return static_cast<double>(shape_numel(a)) / static_cast<double>(shape_numel(b));
}

Shape builtin_matrix_shape(const Shape& s) {
  int64_t last = s.empty() ? 1 : s.back();
  return {last == 0 ? 0 : shape_numel(s) / last, last};
}

Shape builtin_matmul_x_shape(const Shape& x, bool transpose_x) { return infer::matmul_operand(x, transpose_x, false); }

Shape builtin_matmul_y_shape(const Shape& y, bool transpose_y) { return infer::matmul_operand(y, transpose_y, true); }

Shape builtin_matmul_grad_shape(const Shape& x, const Shape& y, bool transpose_x, bool transpose_y) {
  const Tensor xs = Tensor::empty({0}, DType::f32).as_strided(x, contiguous_strides(x), 0);
  const Tensor ys = Tensor::empty({0}, DType::f32).as_strided(y, contiguous_strides(y), 0);
  return infer::matmul_as_matrices("matmul", In{"x", xs}, In{"y", ys}, transpose_x, transpose_y);
}

std::vector<int64_t> builtin_inverse_perm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  const int64_t n = static_cast<int64_t>(perm.size());
  for (int64_t i = 0; i < n; ++i) inv[(perm[i] + n) % n] = i;
  return inv;
}

std::vector<int64_t> builtin_negate(const std::vector<int64_t>& v) {
  std::vector<int64_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = -v[i];
  return out;
}

std::vector<int64_t> builtin_sizes_along(const std::vector<Shape>& shapes, int64_t axis) {
  std::vector<int64_t> out;
  for (const Shape& s : shapes) out.push_back(s[normalize_axis(axis, static_cast<int64_t>(s.size()), "concat")]);
  return out;
}

Shape builtin_tile_grad_shape(const Shape& x, const std::vector<int64_t>& repeats) {
  const size_t n = std::max(x.size(), repeats.size());
  Shape out;
  for (size_t i = 0; i < n; ++i) {
    const int64_t r = i < n - repeats.size() ? 1 : repeats[i - (n - repeats.size())];
    const int64_t s = i < n - x.size() ? 1 : x[i - (n - x.size())];
    out.push_back(r);
    out.push_back(s);
  }
  return out;
}

std::vector<int64_t> builtin_tile_grad_axes(const Shape& x, const std::vector<int64_t>& repeats) {
  std::vector<int64_t> axes;
  for (size_t i = 0; i < std::max(x.size(), repeats.size()); ++i) axes.push_back(static_cast<int64_t>(2 * i));
  return axes;
}

double builtin_reduction_scale(const Shape& x, const std::string& reduction) {
  return reduction == "mean" ? 1.0 / static_cast<double>(shape_numel(x)) : 1.0;
}

namespace detail {

KernelContext kernel_context(Place place, OpMemo* memo) {
  void* stream = place.is_cpu() ? nullptr : allocator_for(place).stream();
  return {.place = place, .stream = stream, .packed = current_packed_weights(), .threads = num_threads(), .memo = memo};
}

void check_tensor(const char* op, const char* arg, const Tensor& t) {
  PD_CHECK(t.defined(), ErrorCode::kInvalidArgument, "{}: argument '{}' is an undefined tensor", op, arg);
}

void check_optional_tensor(const char*, const char*, const Tensor&) {}

void check_tensor_list(const char* op, const char* arg, const std::vector<Tensor>& ts) {
  PD_CHECK(!ts.empty(), ErrorCode::kInvalidArgument, "{}: argument '{}' must hold at least one tensor, but is empty",
           op, arg);
  for (size_t i = 0; i < ts.size(); ++i)
    PD_CHECK(ts[i].defined(), ErrorCode::kInvalidArgument, "{}: argument '{}[{}]' is an undefined tensor", op, arg, i);
}

DType list_dtype(const char* op, const char* arg, const std::vector<Tensor>& ts) {
  check_tensor_list(op, arg, ts);
  return ts[0].dtype();
}

void check_dtype(const char* op, const char* arg, const Tensor& t, DType expected, const char* like) {
  if (!t.defined()) return;
  PD_CHECK(t.dtype() == expected, ErrorCode::kDType, "{}: argument '{}' must have dtype {} (the dtype of '{}'), but received {}",
           op, arg, dtype_name(expected), like, dtype_name(t.dtype()));
}

void check_dtype(const char* op, const char* arg, const std::vector<Tensor>& ts, DType expected, const char* like) {
  for (size_t i = 0; i < ts.size(); ++i)
    PD_CHECK(ts[i].dtype() == expected, ErrorCode::kDType,
             "{}: argument '{}[{}]' must have dtype {} (the dtype of '{}'), but received {}", op, arg, i,
             dtype_name(expected), like, dtype_name(ts[i].dtype()));
}

void check_dtype_class(const char* op, const char* arg, const Tensor& t, const char* cls) {
  if (!t.defined()) return;
  std::string c = cls;
  if (c == "int")
    PD_CHECK(t.dtype() == DType::i32 || t.dtype() == DType::i64, ErrorCode::kDType,
             "{}: argument '{}' must be an integer tensor (i32 or i64), but received {}", op, arg, dtype_name(t.dtype()));
  else if (c == "bool")
    PD_CHECK(t.dtype() == DType::boolean, ErrorCode::kDType, "{}: argument '{}' must be a bool tensor, but received {}",
             op, arg, dtype_name(t.dtype()));
}

Tensor cast_if_needed(const Tensor& t, DType dtype) {
  if (!t.defined() || t.dtype() == dtype) return t;
  return ops::cast(t, dtype);
}

Place place_of(const Tensor& t) { return t.defined() ? t.place() : Place::cpu(); }
Place place_of(const std::vector<Tensor>& ts) { return ts.empty() ? Place::cpu() : ts[0].place(); }

void check_place(const char* op, const char* arg, const Tensor& t, Place place, const char* first) {
  PD_CHECK(!t.defined() || t.place() == place, ErrorCode::kInvalidArgument,
           "{}: argument '{}' is on {}, but '{}' is on {}; move them to one place (Tensor::to)", op, arg, t.place().str(), first,
           place.str());
}

void check_place(const char* op, const char* arg, const std::vector<Tensor>& ts, Place place, const char* first) {
  for (const Tensor& t : ts) check_place(op, arg, t, place, first);
}

const Tensor& contiguous_or_empty(const Tensor& t, Tensor& dense) {
  if (!t.defined() || t.is_contiguous()) return t;
  dense = t.contiguous();
  return dense;
}

std::vector<Tensor> contiguous_list(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(t.contiguous());
  return out;
}

const Tensor& require_contiguous(const char* op, const char* arg, const Tensor& t) {
  PD_CHECK(t.is_contiguous(), ErrorCode::kInvalidArgument,
           "{}: argument '{}' is updated in place and must be contiguous, but has strides {} for shape {}", op, arg,
           shape_str(t.strides()), shape_str(t.shape()));
  // Autograd would otherwise differentiate through values that were overwritten.
  PD_CHECK(!(t.requires_grad() && GradMode::enabled()), ErrorCode::kInvalidArgument,
           "{}: argument '{}' is updated in place but requires grad; update it under pd::NoGradGuard", op, arg);
  return t;
}

Tensor grad_or_zeros(const Tensor& g, const Shape& shape, DType dtype, Place place) {
  if (g.defined()) return g;
  return on_place(ops::zeros(shape, dtype), place);
}

Tensor on_place(const Tensor& t, Place place) { return t.place() == place ? t : t.to(place); }

Tensor sum_to_if_needed(const Tensor& g, const Shape& shape) {
  if (!g.defined() || g.shape() == shape) return g;
  return ops::sum_to(g, shape);
}

void check_boxed_slots(const char* op, const BoxedInputs& in, size_t n_inputs) {
  PD_CHECK(in.size() == n_inputs, ErrorCode::kInvalidArgument, "{}: expected {} tensor input slots, but received {}", op,
           n_inputs, in.size());
}

void check_attr_names(const char* op, const AttrMap& attrs, std::initializer_list<const char*> arg_names) {
  for (const auto& [name, value] : attrs) {
    bool known = false;
    for (const char* a : arg_names) known |= name == a;
    PD_CHECK(known, ErrorCode::kInvalidArgument, "{}: unknown attribute '{}' (the op's arguments are: {})", op, name,
             fmt::join(arg_names, ", "));
  }
}

void check_boxed_call(const char* op, const BoxedInputs& in, size_t n_inputs, const AttrMap& attrs,
                      std::initializer_list<const char*> arg_names) {
  check_boxed_slots(op, in, n_inputs);
  check_attr_names(op, attrs, arg_names);
}

const Tensor& boxed_tensor(const char* op, const char* arg, const std::vector<Tensor>& slot) {
  PD_CHECK(slot.size() == 1, ErrorCode::kInvalidArgument, "{}: input '{}' expects exactly one tensor, but received {}",
           op, arg, slot.size());
  return slot[0];
}

const Tensor& boxed_optional(const std::vector<Tensor>& slot) {
  static const Tensor absent;
  return slot.empty() ? absent : slot[0];
}

template <typename T>
T attr_required(const char* op, const AttrMap& attrs, const char* name) {
  auto it = attrs.find(name);
  PD_CHECK(it != attrs.end(), ErrorCode::kInvalidArgument, "{}: missing required attribute '{}'", op, name);
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  // Accept ints where floats are expected, as a user writing `value: 1` means 1.0.
  if constexpr (std::is_same_v<T, double>)
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  raise(ErrorCode::kInvalidArgument, "{}: attribute '{}' has the wrong type (value {})", op, name, attr_str(it->second));
}

template int64_t attr_required<int64_t>(const char*, const AttrMap&, const char*);
template double attr_required<double>(const char*, const AttrMap&, const char*);
template bool attr_required<bool>(const char*, const AttrMap&, const char*);
template std::vector<int64_t> attr_required<std::vector<int64_t>>(const char*, const AttrMap&, const char*);
template std::vector<double> attr_required<std::vector<double>>(const char*, const AttrMap&, const char*);
template std::string attr_required<std::string>(const char*, const AttrMap&, const char*);
template DType attr_required<DType>(const char*, const AttrMap&, const char*);

}  // namespace detail
}  // namespace pd

namespace pd::detail {

Tensor shape_only(const Shape& shape, DType dtype, Place place) {
  return Tensor::empty({0}, dtype, place).as_strided(shape, contiguous_strides(shape), 0);
}

Tensor meta_cast(const Tensor& t, DType dtype) {
  if (!t.defined() || t.dtype() == dtype) return t;
  return shape_only(t.shape(), dtype);
}

const Tensor meta_tensor(const char* op, const char* arg, const MetaInputs& in, size_t slot) {
  PD_CHECK(slot < in.size() && in[slot].size() == 1, ErrorCode::kInvalidArgument,
           "{}: input '{}' expects exactly one tensor, but received {}", op, arg, slot < in.size() ? in[slot].size() : 0);
  return shape_only(in[slot][0].shape, in[slot][0].dtype);
}

Tensor meta_optional(const MetaInputs& in, size_t slot) {
  if (slot >= in.size() || in[slot].empty()) return Tensor();
  return shape_only(in[slot][0].shape, in[slot][0].dtype);
}

std::vector<Tensor> meta_list(const char* op, const char* arg, const MetaInputs& in, size_t slot) {
  PD_CHECK(slot < in.size(), ErrorCode::kInvalidArgument, "{}: missing input list '{}'", op, arg);
  std::vector<Tensor> out;
  for (const auto& m : in[slot]) out.push_back(shape_only(m.shape, m.dtype));
  return out;
}

}  // namespace pd::detail

namespace pd {

// A size an unknown extent can take where 2 and 3 do not fit the op: the product of its attributes'
// extents (a reshape of [-1, 49, 96] into [-1, 8, 8, 7, 7, 96], as Swin unfolds the windows it folded
// into the batch, fits 301056 rows), or 0 when there are none.
static int64_t attribute_extents(const AttrMap& attrs) {
  int64_t p = 1;
  for (const auto& [name, value] : attrs)
    if (const auto* ints = std::get_if<std::vector<int64_t>>(&value))
      for (int64_t v : *ints)
        if (v > 1 && __builtin_mul_overflow(p, v, &p)) return 0;
  return p > 1 && p < (int64_t{1} << 31) ? p : 0;
}

// Unknown extents are tried at two sizes; an output extent that changes with them is unknown too.
std::vector<TensorMeta> infer_meta(const std::string& op, const MetaInputs& inputs, const AttrMap& attrs) {
  const OpSchema& schema = op_schema(op);
  bool unknown = false;
  for (const auto& slot : inputs)
    for (const auto& m : slot)
      for (int64_t d : m.shape) unknown |= d < 0;
  if (!unknown) return schema.meta(inputs, attrs);
  auto substitute = [&](int64_t n) {
    MetaInputs in = inputs;
    for (auto& slot : in)
      for (auto& m : slot)
        for (int64_t& d : m.shape)
          if (d < 0) d = n;
    return schema.meta(in, attrs);
  };
  std::vector<TensorMeta> a, b;
  try {
    a = substitute(2), b = substitute(3);
  } catch (const Error&) {
    const int64_t p = attribute_extents(attrs);
    if (p == 0) throw;
    try {
      a = substitute(p), b = substitute(2 * p);
    } catch (const Error&) {
      substitute(2);  // throws the small sizes' error, the one that names the op's own rule
      throw;          // (or, where 2 alone fit, the large sizes')
    }
  }
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t d = 0; d < a[i].shape.size(); ++d)
      if (d >= b[i].shape.size() || a[i].shape[d] != b[i].shape[d]) a[i].shape[d] = -1;
  return a;
}

}  // namespace pd
