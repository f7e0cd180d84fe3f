#include "pd/core/tensor.h"

#include <cstring>

#include "pd/core/allocator.h"
#include "pd/core/autograd_meta.h"
#include "pd/core/tensor_inl.h"

namespace pd {
namespace {

AutogradMeta& autograd_meta(TensorImpl* impl) {
  if (!impl->autograd) impl->autograd = std::make_shared<AutogradMeta>();
  return *impl->autograd;
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Place place) {
  Allocator& allocator = allocator_for(place);
  auto impl = std::make_shared<TensorImpl>();
  const int64_t n = shape_numel(shape);
  int64_t bytes = 0;
  PD_CHECK(!__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(dtype)), &bytes), ErrorCode::kShape,
           "Tensor::empty: shape {} of {} needs more bytes than fit in int64", shape_str(shape), dtype_name(dtype));
  impl->storage = std::make_shared<Storage>();
  impl->storage->data = allocator.allocate(static_cast<size_t>(bytes));
  impl->storage->bytes = static_cast<size_t>(bytes);
  impl->storage->place = place;
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::full_scalar(double value, DType dtype, Place place) {
  Tensor t = empty({}, dtype);
  visit_dtype(dtype, [&]<typename T>() { *t.data<T>() = convert<T>(value); });
  return place.is_cpu() ? t : t.to(place);
}

int64_t Tensor::size(int64_t axis) const { return shape()[normalize_axis(axis, dim(), "Tensor::size")]; }

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (shape()[d] == 1) continue;
    if (strides()[d] != expected) return false;
    expected *= shape()[d];
  }
  return true;
}

void* Tensor::raw_data() const {
  return static_cast<char*>(impl_->storage->data.get()) + impl_->offset * static_cast<int64_t>(dtype_size(dtype()));
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), place());
  allocator_for(place()).copy_strided(out.raw_data(), raw_data(), dtype_size(dtype()), shape(), strides());
  return out;
}

Tensor Tensor::to(Place place) const {
  PD_CHECK(defined(), ErrorCode::kInvalidArgument, "Tensor::to: the tensor is undefined");
  if (place == this->place()) return *this;
  if (!place.is_cpu() && !this->place().is_cpu()) return to(Place::cpu()).to(place);  // device to device
  const Tensor src = contiguous();
  Tensor out = empty(shape(), dtype(), place);
  const size_t bytes = static_cast<size_t>(numel()) * dtype_size(dtype());
  if (place.is_cpu()) allocator_for(src.place()).copy_to_host(out.raw_data(), src.raw_data(), bytes);
  else allocator_for(place).copy_from_host(out.raw_data(), src.raw_data(), bytes);
  return out;
}

void Tensor::copy_(const Tensor& src) const {
  PD_CHECK(defined() && src.defined(), ErrorCode::kInvalidArgument, "Tensor::copy_: undefined tensor");
  PD_CHECK(src.shape() == shape() && src.dtype() == dtype(), ErrorCode::kShape,
           "Tensor::copy_: source is {} {}, destination {} {}", dtype_name(src.dtype()), shape_str(src.shape()),
           dtype_name(dtype()), shape_str(shape()));
  PD_CHECK(is_contiguous(), ErrorCode::kInvalidArgument, "Tensor::copy_: the destination must be contiguous");
  const size_t bytes = static_cast<size_t>(numel()) * dtype_size(dtype());
  if (bytes == 0) return;
  const Tensor host = src.place().is_cpu() ? src.contiguous() : src.to(Place::cpu());
  if (place().is_cpu()) std::memcpy(raw_data(), host.raw_data(), bytes);
  else allocator_for(place()).copy_from_host(raw_data(), host.raw_data(), bytes);
}

void Tensor::set_data(const Tensor& src) const {
  PD_CHECK(defined() && src.defined(), ErrorCode::kInvalidArgument, "Tensor::set_data: undefined tensor");
  impl_->storage = src.impl_->storage;
  impl_->offset = src.impl_->offset;
  impl_->shape = src.impl_->shape;
  impl_->strides = src.impl_->strides;
  impl_->dtype = src.impl_->dtype;
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = offset;
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  return fmt::format("Tensor({}, {})", dtype_name(dtype()), shape_str(shape()));
}

bool Tensor::requires_grad() const { return defined() && impl_->autograd && impl_->autograd->requires_grad; }

Tensor& Tensor::set_requires_grad(bool value) {
  PD_CHECK(defined(), ErrorCode::kInvalidArgument, "set_requires_grad on an undefined tensor");
  PD_CHECK(is_leaf(), ErrorCode::kInvalidArgument,
           "set_requires_grad: only leaf tensors can be changed; use detach() to make a new leaf");
  PD_CHECK(!value || is_floating(dtype()), ErrorCode::kDType,
           "set_requires_grad: only floating-point tensors can require gradients, but this tensor is {}",
           dtype_name(dtype()));
  autograd_meta(impl_.get()).requires_grad = value;
  return *this;
}

bool Tensor::is_leaf() const { return !impl_->autograd || !impl_->autograd->grad_fn; }

Tensor Tensor::grad() const { return impl_->autograd ? impl_->autograd->grad : Tensor(); }

void Tensor::set_grad(const Tensor& g) const { autograd_meta(impl_.get()).grad = g; }

std::shared_ptr<GradNode> Tensor::grad_fn() const { return impl_->autograd ? impl_->autograd->grad_fn : nullptr; }

Tensor Tensor::detach() const { return as_strided(shape(), strides(), offset()); }

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  PD_CHECK(requires_grad(), ErrorCode::kInvalidArgument,
           "register_hook: the tensor does not require grad, so no gradient will reach the hook");
  AutogradMeta& meta = autograd_meta(impl_.get());
  if (meta.grad_fn)
    meta.grad_fn->pre_hooks.emplace_back(meta.output_nr, std::move(hook));
  else
    meta.hooks.push_back(std::move(hook));
}

void Tensor::register_post_accumulate_grad_hook(std::function<void()> hook) const {
  PD_CHECK(requires_grad() && is_leaf(), ErrorCode::kInvalidArgument,
           "register_post_accumulate_grad_hook: only a leaf that requires grad accumulates a gradient");
  autograd_meta(impl_.get()).post_accumulate_hooks.push_back(std::move(hook));
}

void Tensor::clear_post_accumulate_grad_hooks() const {
  if (defined() && impl_->autograd) impl_->autograd->post_accumulate_hooks.clear();
}

}  // namespace pd
