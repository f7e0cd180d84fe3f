// max_pool2d / avg_pool2d through oneDNN pooling (forward_inference: no workspace is needed
// because the backward pass is not computed with oneDNN).
#include <algorithm>

#include "cpu/onednn/onednn_common.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

struct PoolEntry {
  dnnl::memory::desc src, dst;
  dnnl::pooling_forward prim;
};

void pool2d(const char* name, dnnl::algorithm alg, const Tensor& x, const std::vector<int64_t>& kernel_size,
            const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, Tensor& out) {
  if (out.numel() == 0) return;
  guarded(name, [&] {
    const dims sd = to_dims(x.shape()), dd = to_dims(out.shape());
    dims kernel, strides, pad_l, pad_r;
    for (int i = 0; i < 2; ++i) {
      kernel.push_back(kernel_size[i]);
      strides.push_back(stride.empty() ? kernel_size[i] : stride[i]);  // [] means stride = kernel
      pad_l.push_back(padding[i]);
      // The output size (ceil_mode or not) is already in out's shape; derive the right padding
      // that makes the last window end there. Floor mode may skip trailing rows: clamp at 0.
      const int64_t span = (dd[2 + i] - 1) * strides[i] + kernel[i];
      pad_r.push_back(std::max<int64_t>(span - sd[2 + i] - padding[i], 0));
    }
    std::string key = fmt::format("pool:{}:{}:{}:{}:{}:{}:{}", static_cast<int>(alg), dims_key(sd), dims_key(dd),
                                  dims_key(kernel), dims_key(strides), dims_key(pad_l), dims_key(pad_r));
    auto e = cached<PoolEntry>(key, [&] {
      PoolEntry p{plain_desc(sd), plain_desc(dd), {}};
      dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, p.src, p.dst, strides, kernel, pad_l,
                                    pad_r);
      p.prim = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(d, cpu_engine()));
      return p;
    });
    e->prim.execute(cpu_stream(), {{DNNL_ARG_SRC, wrap(e->src, x)}, {DNNL_ARG_DST, wrap(e->dst, out)}});
  });
}

}  // namespace

template <typename T>
void max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& padding, bool ceil_mode, Tensor& out) {
  pool2d("max_pool2d", dnnl::algorithm::pooling_max, x, kernel_size, stride, padding, out);
}

template <typename T>
void avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& padding, bool ceil_mode, bool exclusive, Tensor& out) {
  pool2d("avg_pool2d",
         exclusive ? dnnl::algorithm::pooling_avg_exclude_padding : dnnl::algorithm::pooling_avg_include_padding, x,
         kernel_size, stride, padding, out);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(max_pool2d, onednn, float)
PD_INSTANTIATE_KERNELS(avg_pool2d, onednn, float)
