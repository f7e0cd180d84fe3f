// Tensor: a handle to shared storage plus offset, shape and strides. Copies of a Tensor are the
// same tensor (like torch.Tensor); views (reshape, transpose, slice, expand...) share storage.
//
//   pd::Tensor x = pd::Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
//   x.set_requires_grad(true);
//   pd::Tensor y = pd::ops::sum(pd::ops::mul(x, x));
//   pd::backward(y);                       // x.grad() == 2 * x
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "pd/core/dtype.h"
#include "pd/core/place.h"
#include "pd/core/shape.h"

namespace pd {

class GradNode;
struct AutogradMeta;

struct Storage {
  std::shared_ptr<void> data;
  size_t bytes = 0;
  Place place;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape;
  Shape strides;       // in elements; 0 for broadcast dims
  DType dtype = DType::f32;
  std::shared_ptr<AutogradMeta> autograd;  // null until requires_grad or recorded by an op
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Uninitialised contiguous tensor from the caching allocator.
  static Tensor empty(const Shape& shape, DType dtype, Place place = Place::cpu());
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor scalar(T value) { return from_vector<T>({value}, {}); }
  // A 0-D tensor of `dtype` holding `value` on `place` (used for literals in formulas).
  static Tensor full_scalar(double value, DType dtype, Place place = Place::cpu());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->shape; }
  const Shape& strides() const { return impl_->strides; }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t size(int64_t axis) const;
  int64_t numel() const { return shape_numel(impl_->shape); }
  int64_t offset() const { return impl_->offset; }
  DType dtype() const { return impl_->dtype; }
  Place place() const { return impl_->storage->place; }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

  template <typename T>
  T* data() const {
    PD_CHECK(defined(), ErrorCode::kInvalidArgument, "data<{}>() on an undefined tensor", dtype_name(dtype_of_v<T>));
    PD_CHECK(dtype_of_v<T> == dtype(), ErrorCode::kDType, "data<{}>() on a tensor of dtype {}",
             dtype_name(dtype_of_v<T>), dtype_name(dtype()));
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const;

  // A contiguous tensor with the same values (this tensor itself when already contiguous). Not recorded.
  Tensor contiguous() const;
  // A new view of the same storage; the caller guarantees the geometry fits.
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;
  // Deep copy, contiguous, no autograd history.
  Tensor clone() const;
  // This tensor on `place` (itself when already there), copied through the places' allocators
  // (pd/core/allocator.h); contiguous, no autograd history. Device-to-device copies go through the host.
  // Copies to the host wait for the device's stream; to_vector() and item() copy device tensors first.
  Tensor to(Place place) const;
  // Copies `src`'s values (same shape and dtype, any place) into this contiguous tensor's storage.
  void copy_(const Tensor& src) const;
  // Points this tensor (every copy of the handle) at `src`'s storage and geometry, keeping its
  // autograd identity: how a network's parameters move to a device (PyTorch's `param.data = ...`).
  void set_data(const Tensor& src) const;
  // Values converted to `T` in row-major order.
  template <typename T>
  std::vector<T> to_vector() const;
  // The single value of a one-element tensor, converted to T.
  template <typename T>
  T item() const;
  std::string str() const;  // "Tensor(f32, [2, 3])"

  // ---- autograd (see pd/autograd/autograd.h) ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool value);   // leaves only
  bool is_leaf() const;
  Tensor grad() const;                      // accumulated gradient of a leaf (undefined if none)
  void set_grad(const Tensor& g) const;
  void zero_grad() const { set_grad(Tensor()); }
  std::shared_ptr<GradNode> grad_fn() const;
  Tensor detach() const;                    // same storage, no history
  // Called with the gradient flowing into this tensor; may return a replacement.
  void register_hook(std::function<Tensor(const Tensor&)> hook) const;
  // Leaves only: called after backward has added this pass's gradient into .grad() (PyTorch's
  // register_post_accumulate_grad_hook). The hook must not hold the tensor itself (a cycle).
  void register_post_accumulate_grad_hook(std::function<void()> hook) const;
  void clear_post_accumulate_grad_hooks() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace pd
#include "pd/core/tensor_inl.h"  // template definitions
