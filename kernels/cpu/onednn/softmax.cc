// softmax / log_softmax along one axis through the oneDNN 2.6 softmax and logsoftmax primitives.
#include "cpu/onednn/onednn_common.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

constexpr int64_t kSingleThreadSoftmaxValues = int64_t{1} << 14;

struct SoftmaxEntry {
  dnnl::memory::desc md;
  dnnl::primitive prim;
};

template <typename Prim>
void softmax_like(const char* name, const Tensor& x, int64_t axis, Tensor& out) {
  if (out.numel() == 0) return;
  guarded(name, [&] {
    const dims d = to_dims(x.shape());  // 0-D becomes [1], whose only axis is 0
    const int a = x.dim() == 0 ? 0 : static_cast<int>(normalize_axis(axis, x.dim(), name));
    // Small ones on one thread: waking OpenMP's team costs more than the work (and beside another busy
    // process, a time slice; see matmul_common.h).
    OneThreadIf one_thread(x.numel() < kSingleThreadSoftmaxValues);
    auto e = cached<SoftmaxEntry>(fmt::format("{}:{}:{}{}", name, dims_key(d), a, one_thread ? ":t1" : ""), [&] {
      auto md = plain_desc(d);
      typename Prim::desc desc(dnnl::prop_kind::forward_inference, md, a);
      return SoftmaxEntry{md, Prim(typename Prim::primitive_desc(desc, cpu_engine()))};
    });
    e->prim.execute(cpu_stream(), {{DNNL_ARG_SRC, wrap(e->md, x)}, {DNNL_ARG_DST, wrap(e->md, out)}});
  });
}

}  // namespace

template <typename T>
void softmax(const KernelContext& ctx, const Tensor& x, int64_t axis, Tensor& out) {
  if (beyond_onednn_rank(x.dim())) return reference::softmax<float>(ctx, x, axis, out);
  softmax_like<dnnl::softmax_forward>("softmax", x, axis, out);
}

template <typename T>
void log_softmax(const KernelContext& ctx, const Tensor& x, int64_t axis, Tensor& out) {
  if (beyond_onednn_rank(x.dim())) return reference::log_softmax<float>(ctx, x, axis, out);
  softmax_like<dnnl::logsoftmax_forward>("log_softmax", x, axis, out);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(softmax, onednn, float)
PD_INSTANTIATE_KERNELS(log_softmax, onednn, float)
