// Template definitions for tensor.h.
#pragma once
#include "pd/core/tensor.h"

namespace pd {

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  Tensor t = empty(shape, dtype_of_v<T>);
  PD_CHECK(static_cast<int64_t>(values.size()) == t.numel(), ErrorCode::kShape,
           "Tensor::from_vector: {} values do not fill shape {} ({} elements)", values.size(), shape_str(shape),
           t.numel());
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = place().is_cpu() ? contiguous() : to(Place::cpu());
  std::vector<T> out(static_cast<size_t>(c.numel()));
  visit_dtype(c.dtype(), [&]<typename S>() {
    const S* src = static_cast<const S*>(c.raw_data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = convert<T>(src[i]);
  });
  return out;
}

template <typename T>
T Tensor::item() const {
  PD_CHECK(numel() == 1, ErrorCode::kShape, "item(): tensor must have exactly one element, but has shape {}",
           shape_str(shape()));
  return to_vector<T>()[0];
}

}  // namespace pd
