// batch_norm over axis 1 through oneDNN batch normalization. oneDNN produces the batch mean and
// biased variance; the saved inverse std and the running-stat update (Paddle momentum
// convention, unbiased variance) are done here because oneDNN does not track running stats.
#include <cmath>
#include <vector>

#include "cpu/onednn/onednn_common.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

using bnorm = dnnl::batch_normalization_forward;
using flags = dnnl::normalization_flags;

struct BatchNormEntry {
  dnnl::memory::desc data, channel;
  bnorm prim;
};

// [N, C] -> [N, C, 1, 1]; [N, C, d...] -> [N, C, prod(d), 1]: oneDNN wants 4-D (or 5-D) data.
dims as_4d(const Shape& s) {
  const int64_t n = s.size() > 0 ? s[0] : 1;
  const int64_t c = s.size() > 1 ? s[1] : 1;
  int64_t rest = 1;
  for (size_t i = 2; i < s.size(); ++i) rest *= s[i];
  return {n, c, rest, 1};
}

}  // namespace

template <typename T>
void batch_norm(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& running_mean,
                const Tensor& running_var, double momentum, double epsilon, bool training, Tensor& out,
                Tensor& saved_mean, Tensor& saved_invstd) {
  if (out.numel() == 0) return;
  guarded("batch_norm", [&] {
    const dims d = as_4d(x.shape());
    const int64_t c = d[1];
    const auto fl = training ? (flags::use_scale | flags::use_shift)
                             : (flags::use_scale | flags::use_shift | flags::use_global_stats);
    const auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    auto e = cached<BatchNormEntry>(fmt::format("batch_norm:{}:{}:{}", dims_key(d), epsilon, training), [&] {
      BatchNormEntry b{plain_desc(d), plain_desc(dims{c}), {}};
      b.prim = bnorm(bnorm::primitive_desc(bnorm::desc(prop, b.data, static_cast<float>(epsilon), fl), cpu_engine()));
      return b;
    });
    float* mean = saved_mean.data<float>();
    float* invstd = saved_invstd.data<float>();
    float* rmean = running_mean.data<float>();
    float* rvar = running_var.data<float>();
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap(e->data, x)},
                                               {DNNL_ARG_DST, wrap(e->data, out)},
                                               {DNNL_ARG_SCALE, wrap(e->channel, scale)},
                                               {DNNL_ARG_SHIFT, wrap(e->channel, bias)}};
    if (!training) {
      args.emplace(DNNL_ARG_MEAN, wrap(e->channel, running_mean));
      args.emplace(DNNL_ARG_VARIANCE, wrap(e->channel, running_var));
      e->prim.execute(cpu_stream(), args);
      cpu_stream().wait();
      for (int64_t i = 0; i < c; ++i) {
        mean[i] = rmean[i];
        invstd[i] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(rvar[i]) + epsilon));
      }
      return;
    }
    // The batch mean goes straight into saved_mean; the variance into a scratch buffer.
    std::vector<float> var(static_cast<size_t>(c));
    args.emplace(DNNL_ARG_MEAN, wrap(e->channel, saved_mean));
    args.emplace(DNNL_ARG_VARIANCE, dnnl::memory(e->channel, cpu_engine(), var.data()));
    e->prim.execute(cpu_stream(), args);
    cpu_stream().wait();
    const int64_t n = d[0] * d[2] * d[3];
    const double unbias = n > 1 ? static_cast<double>(n) / static_cast<double>(n - 1) : 1.0;
    for (int64_t i = 0; i < c; ++i) {
      invstd[i] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var[i]) + epsilon));
      rmean[i] = static_cast<float>(momentum * rmean[i] + (1.0 - momentum) * mean[i]);
      rvar[i] = static_cast<float>(momentum * rvar[i] + (1.0 - momentum) * var[i] * unbias);
    }
  });
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(batch_norm, onednn, float)
