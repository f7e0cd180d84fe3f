// Reference embedding lookup and its gradient (scatter-add of grad rows into a dense weight gradient).
#include <algorithm>

#include "kernels.h"

namespace pd::kernels::reference {
namespace {

// Ids as int64, each checked against [0, num_embeddings).
std::vector<int64_t> read_ids(const Tensor& x, int64_t num_embeddings, const char* op) {
  std::vector<int64_t> ids = x.to_vector<int64_t>();
  for (size_t k = 0; k < ids.size(); ++k) {
    PD_CHECK(ids[k] >= 0 && ids[k] < num_embeddings, ErrorCode::kOutOfRange,
             "{}: argument 'x' value {} at index {} is out of range [0, {})", op, ids[k], k, num_embeddings);
  }
  return ids;
}

}  // namespace

template <typename T>
void embedding(const KernelContext& ctx, const Tensor& x, const Tensor& weight, int64_t padding_idx, Tensor& out) {
  const int64_t V = weight.shape()[0], D = weight.shape()[1];
  const std::vector<int64_t> ids = read_ids(x, V, "embedding");
  const T* wd = weight.data<T>();
  T* od = out.data<T>();
  for (size_t k = 0; k < ids.size(); ++k)
    std::copy(wd + ids[k] * D, wd + (ids[k] + 1) * D, od + static_cast<int64_t>(k) * D);
}

template <typename T>
void embedding_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, const std::vector<int64_t>& weight_shape,
                    int64_t padding_idx, Tensor& dweight) {
  const int64_t V = dweight.shape()[0], D = dweight.shape()[1];
  const std::vector<int64_t> ids = read_ids(x, V, "embedding_grad");
  const T* gd = grad.data<T>();
  T* dd = dweight.data<T>();
  std::fill(dd, dd + dweight.numel(), T(0));
  for (size_t k = 0; k < ids.size(); ++k) {
    // The padding row is frozen: it receives no gradient.
    if (padding_idx >= 0 && ids[k] == padding_idx) continue;
    const T* g = gd + static_cast<int64_t>(k) * D;
    T* row = dd + ids[k] * D;
    for (int64_t j = 0; j < D; ++j) row[j] += g[j];
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(embedding, reference, float, double)
PD_INSTANTIATE_KERNELS(embedding_grad, reference, float, double)
