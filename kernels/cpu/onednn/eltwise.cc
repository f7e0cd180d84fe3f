// Unary activations and their backward passes through the oneDNN eltwise primitives.
// Elementwise ops ignore shape, so every tensor is viewed as 1-D [numel]: one cache entry per size.
#include "cpu/onednn/onednn_common.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

using alg = dnnl::algorithm;

// Below this many values an activation runs on the calling thread: on OpenMP's team it would wake the
// team for microseconds of work (a batch norm folded at load takes a square root of 32 values), and the
// team then spins beside the kernels' pool, or waits out another busy process's time slice.
constexpr int64_t kSingleThreadEltwiseValues = int64_t{1} << 15;

struct EltwiseEntry {
  dnnl::memory::desc md;
  dnnl::primitive prim;
};

void eltwise_fwd(const char* name, alg a, float alpha, const Tensor& x, Tensor& out) {
  if (out.numel() == 0) return;
  guarded(name, [&] {
    dims d{out.numel()};
    OneThreadIf one_thread(d[0] < kSingleThreadEltwiseValues);  // oneDNN splits by the thread count it sees when made
    const std::string key = fmt::format("eltwise_fwd:{}:{}:{}{}", static_cast<int>(a), alpha, d[0], one_thread ? ":t1" : "");
    auto e = cached<EltwiseEntry>(key, [&] {
      auto md = plain_desc(d);
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, a, md, alpha, 0.f);
      return EltwiseEntry{md, dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(desc, cpu_engine()))};
    });
    e->prim.execute(cpu_stream(), {{DNNL_ARG_SRC, wrap(e->md, x)}, {DNNL_ARG_DST, wrap(e->md, out)}});
  });
}

// `data` is the forward input (src) or, for the *_use_dst_for_bwd algorithms, the forward output.
void eltwise_bwd(const char* name, alg a, bool data_is_dst, const Tensor& data, const Tensor& grad, Tensor& dx) {
  if (dx.numel() == 0) return;
  guarded(name, [&] {
    dims d{dx.numel()};
    OneThreadIf one_thread(d[0] < kSingleThreadEltwiseValues);
    auto e = cached<EltwiseEntry>(fmt::format("eltwise_bwd:{}:{}{}", static_cast<int>(a), d[0], one_thread ? ":t1" : ""), [&] {
      auto md = plain_desc(d);
      // The backward primitive descriptor needs a forward one as a hint.
      dnnl::eltwise_forward::primitive_desc hint(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, a, md, 0.f, 0.f), cpu_engine());
      dnnl::eltwise_backward::desc desc(a, md, md, 0.f, 0.f);
      return EltwiseEntry{md, dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(desc, cpu_engine(), hint))};
    });
    e->prim.execute(cpu_stream(), {{data_is_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, wrap(e->md, data)},
                                   {DNNL_ARG_DIFF_DST, wrap(e->md, grad)},
                                   {DNNL_ARG_DIFF_SRC, wrap(e->md, dx)}});
  });
}

}  // namespace

template <typename T>
void exp(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("exp", alg::eltwise_exp, 0.f, x, out); }
template <typename T>
void log(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("log", alg::eltwise_log, 0.f, x, out); }
template <typename T>
void sqrt(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("sqrt", alg::eltwise_sqrt, 0.f, x, out); }
template <typename T>
void abs(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("abs", alg::eltwise_abs, 0.f, x, out); }
template <typename T>
void tanh(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("tanh", alg::eltwise_tanh, 0.f, x, out); }
template <typename T>
void sigmoid(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("sigmoid", alg::eltwise_logistic, 0.f, x, out); }
template <typename T>
void gelu(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("gelu", alg::eltwise_gelu_erf, 0.f, x, out); }
template <typename T>
void gelu_tanh(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("gelu_tanh", alg::eltwise_gelu_tanh, 0.f, x, out); }
// silu(x) = x * sigmoid(x) is swish with alpha = 1.
template <typename T>
void silu(const KernelContext& ctx, const Tensor& x, Tensor& out) { eltwise_fwd("silu", alg::eltwise_swish, 1.f, x, out); }

template <typename T>
void sigmoid_grad(const KernelContext& ctx, const Tensor& out, const Tensor& grad, Tensor& dx) {
  eltwise_bwd("sigmoid_grad", alg::eltwise_logistic_use_dst_for_bwd, true, out, grad, dx);
}
template <typename T>
void tanh_grad(const KernelContext& ctx, const Tensor& out, const Tensor& grad, Tensor& dx) {
  eltwise_bwd("tanh_grad", alg::eltwise_tanh_use_dst_for_bwd, true, out, grad, dx);
}
template <typename T>
void relu_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, Tensor& dx) {
  eltwise_bwd("relu_grad", alg::eltwise_relu, false, x, grad, dx);
}
template <typename T>
void gelu_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, Tensor& dx) {
  eltwise_bwd("gelu_grad", alg::eltwise_gelu_erf, false, x, grad, dx);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(exp, onednn, float)
PD_INSTANTIATE_KERNELS(log, onednn, float)
PD_INSTANTIATE_KERNELS(sqrt, onednn, float)
PD_INSTANTIATE_KERNELS(abs, onednn, float)
PD_INSTANTIATE_KERNELS(tanh, onednn, float)
PD_INSTANTIATE_KERNELS(sigmoid, onednn, float)
PD_INSTANTIATE_KERNELS(gelu, onednn, float)
PD_INSTANTIATE_KERNELS(gelu_tanh, onednn, float)
PD_INSTANTIATE_KERNELS(silu, onednn, float)
PD_INSTANTIATE_KERNELS(sigmoid_grad, onednn, float)
PD_INSTANTIATE_KERNELS(tanh_grad, onednn, float)
PD_INSTANTIATE_KERNELS(relu_grad, onednn, float)
PD_INSTANTIATE_KERNELS(gelu_grad, onednn, float)
