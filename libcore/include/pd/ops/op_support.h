// What the generated op API and GradNodes call: argument checks, dtype promotion, contiguity, boxed
// calls and the builtins of backward formulas. Not meant for users.
#pragma once
#include <tuple>
#include <vector>

#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"
#include "pd/ops/attr.h"
#include "pd/ops/op_schema.h"

namespace pd {

// Type promotion (docs/type-promotion.md): bool < integers < floats; within a category the wider
// type wins; 0-D tensors take part only when their category is higher than the others'.
DType promote_types(std::initializer_list<const Tensor*> inputs);

// Global random generator for ops whose seed is -1.
void manual_seed(uint64_t seed);
uint64_t next_seed();

// Builtins of backward formulas (ops.yaml `backward:`).
double builtin_numel_ratio(const Shape& a, const Shape& b);        // numel(a) / numel(b)
Shape builtin_matrix_shape(const Shape& s);                         // [numel / last, last]
// matmul's operands and result as matrices (infer::matmul_operand), for its backward with 1-D operands.
Shape builtin_matmul_x_shape(const Shape& x, bool transpose_x);
Shape builtin_matmul_y_shape(const Shape& y, bool transpose_y);
Shape builtin_matmul_grad_shape(const Shape& x, const Shape& y, bool transpose_x, bool transpose_y);
std::vector<int64_t> builtin_inverse_perm(const std::vector<int64_t>& perm);
std::vector<int64_t> builtin_negate(const std::vector<int64_t>& v);
std::vector<int64_t> builtin_sizes_along(const std::vector<Shape>& shapes, int64_t axis);
// tile's gradient: grad viewed as [r0, s0, r1, s1, ...] (x's shape and the repeats, both padded with
// leading 1s to one length) and summed over the repeat axes [0, 2, 4, ...].
Shape builtin_tile_grad_shape(const Shape& x, const std::vector<int64_t>& repeats);
std::vector<int64_t> builtin_tile_grad_axes(const Shape& x, const std::vector<int64_t>& repeats);
// A loss's factor for its per-element gradient: 1 / numel(x) for reduction "mean", else 1.
double builtin_reduction_scale(const Shape& x, const std::string& reduction);

namespace detail {

// The context every kernel call gets: the place, the packed-weight cache of the enclosing
// PackedWeightsScope (an Executor's, in inference mode) and the thread count.
KernelContext kernel_context(Place place, OpMemo* memo = nullptr);

void check_tensor(const char* op, const char* arg, const Tensor& t);
void check_optional_tensor(const char* op, const char* arg, const Tensor& t);
void check_tensor_list(const char* op, const char* arg, const std::vector<Tensor>& ts);
DType list_dtype(const char* op, const char* arg, const std::vector<Tensor>& ts);
void check_dtype(const char* op, const char* arg, const Tensor& t, DType expected, const char* like);
void check_dtype(const char* op, const char* arg, const std::vector<Tensor>& ts, DType expected, const char* like);
void check_dtype_class(const char* op, const char* arg, const Tensor& t, const char* cls);
Tensor cast_if_needed(const Tensor& t, DType dtype);
Place place_of(const Tensor& t);
Place place_of(const std::vector<Tensor>& ts);
// Throws pd::Error naming both places when a (defined) input is not on `place`, the place of `first`.
void check_place(const char* op, const char* arg, const Tensor& t, Place place, const char* first);
void check_place(const char* op, const char* arg, const std::vector<Tensor>& ts, Place place, const char* first);
// `t` itself when it is undefined or contiguous (no copy of the handle), else a contiguous copy kept in
// `dense`, which the caller declares.
const Tensor& contiguous_or_empty(const Tensor& t, Tensor& dense);
std::vector<Tensor> contiguous_list(const std::vector<Tensor>& ts);
// A tensor an op updates in place: contiguous, and not one autograd tracks while grad mode is on.
const Tensor& require_contiguous(const char* op, const char* arg, const Tensor& t);

// Backward helpers.
Tensor grad_or_zeros(const Tensor& g, const Shape& shape, DType dtype, Place place = Place::cpu());
// t on `place` (itself when it is there already): what a gradient formula's creation ops make on
// the CPU, moved to where the node ran.
Tensor on_place(const Tensor& t, Place place);
Tensor sum_to_if_needed(const Tensor& g, const Shape& shape);

// Shape-only tensors for the meta functions: a shape and dtype over an empty storage.
Tensor shape_only(const Shape& shape, DType dtype, Place place = Place::cpu());
Tensor meta_cast(const Tensor& t, DType dtype);
const Tensor meta_tensor(const char* op, const char* arg, const MetaInputs& in, size_t slot);
Tensor meta_optional(const MetaInputs& in, size_t slot);
std::vector<Tensor> meta_list(const char* op, const char* arg, const MetaInputs& in, size_t slot);
inline TensorMeta meta_of(const Tensor& t) { return {t.dtype(), t.shape()}; }
inline void append_meta(std::vector<TensorMeta>& out, const Tensor& t) { out.push_back(meta_of(t)); }
inline void append_meta(std::vector<TensorMeta>& out, const std::vector<Tensor>& ts) {
  for (const auto& t : ts) out.push_back(meta_of(t));
}
template <typename... Ts>
std::vector<TensorMeta> meta_of_all(const Ts&... outs) {
  std::vector<TensorMeta> out;
  (append_meta(out, outs), ...);
  return out;
}

// Boxed calls. check_boxed_call checks the slot count and that every attribute is an argument of the
// op; a bound call (its kernel bound once by bind_NAME, which ran check_attr_names) checks the slots only.
void check_boxed_call(const char* op, const BoxedInputs& in, size_t n_inputs, const AttrMap& attrs,
                      std::initializer_list<const char*> arg_names);
void check_attr_names(const char* op, const AttrMap& attrs, std::initializer_list<const char*> arg_names);
void check_boxed_slots(const char* op, const BoxedInputs& in, size_t n_inputs);
const Tensor& boxed_tensor(const char* op, const char* arg, const std::vector<Tensor>& slot);
const Tensor& boxed_optional(const std::vector<Tensor>& slot);  // an absent optional: an undefined tensor
template <typename T>
T attr_required(const char* op, const AttrMap& attrs, const char* name);
// One lookup when the attribute is there with its own type (every bound call reads all its attributes
// this way); conversions and errors are attr_required's.
template <typename T>
T attr_or(const char* op, const AttrMap& attrs, const char* name, T fallback) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return attr_required<T>(op, attrs, name);
}
inline void append_outputs(std::vector<Tensor>& out, const Tensor& t) { out.push_back(t); }
inline void append_outputs(std::vector<Tensor>& out, const std::vector<Tensor>& ts) {
  out.insert(out.end(), ts.begin(), ts.end());
}
inline std::vector<Tensor> flatten_outputs(Tensor t) { return {std::move(t)}; }
inline std::vector<Tensor> flatten_outputs(std::vector<Tensor> ts) { return ts; }
template <typename... Ts>
std::vector<Tensor> flatten_outputs(std::tuple<Ts...> t) {
  std::vector<Tensor> out;
  std::apply([&](auto&... parts) { (append_outputs(out, parts), ...); }, t);
  return out;
}

// Observer plumbing: an optional input as a boxed slot, and the outputs of a call as one list.
inline std::vector<Tensor> optional_slot(const Tensor& t) { return t.defined() ? std::vector<Tensor>{t} : std::vector<Tensor>{}; }
template <typename... Ts>
std::vector<Tensor> meta_free_outputs(const Ts&... outs) {
  std::vector<Tensor> out;
  (append_outputs(out, outs), ...);
  return out;
}

}  // namespace detail
}  // namespace pd
