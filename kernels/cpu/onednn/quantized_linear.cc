// quantized_linear on oneDNN's int8 matmul: u8 / s8 activations with their zero point, the s8 weight
// read as its transpose and packed once, and the epilogue fused (quantized_common.h). Up to 4 rows go to
// the direct kernel (cpu/ref/quantized_direct.h), which serves them faster.
#include "cpu/onednn/quantized_common.h"
#include "cpu/ref/quantized_direct.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::onednn {

using namespace int8;

template <typename T>
void quantized_linear(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                      const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                      const Tensor& out_zero_point, const std::string& activation, double alpha, DType out_dtype,
                      Tensor& out) {
  const Activation act = parse_activation("quantized_linear", activation);
  if (out.numel() == 0) return;
  if (reference::quantized_linear_direct(ctx, !cpu_has_vnni() && beyond_seven_bits(ctx, weight), x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point,
                                         activation, alpha, out_dtype, out))
    return;
  const int64_t out_f = weight.shape()[0], in = weight.shape()[1], m = out.numel() / out_f;
  const Tensor src = int8_source(x);
  const Int8Params p = int8_params(ctx, src.dtype(), source_zero_point(x, x_zero_point), x_scale, weight, weight_scale, bias,
                                   out_scale, out_zero_point, out_dtype);
  const auto attr = int8_attr(p, 1 << 1, act, alpha, out_dtype);
  if (!attr || in == 0)
    return reference::quantized_linear<T>(ctx, x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale,
                                          out_zero_point, activation, alpha, out_dtype, out);
  guarded("quantized_linear", [&] {
    const dt src_dt = onednn_dtype(src.dtype()), dst_dt = onednn_dtype(out_dtype);
    // weight [out_f, in] read as its transpose [in, out_f]; the primitive picks its own packed layout.
    const dnnl::memory::desc src_md(dims{m, in}, src_dt, tag::ab), plain_wei(dims{in, out_f}, dt::s8, tag::ba),
        any_wei(dims{in, out_f}, dt::s8, tag::any), dst(dims{m, out_f}, dst_dt, tag::ab), bmd = plain_desc(dims{1, out_f});
    const std::string key = fmt::format("quantized_linear:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{:x}", m, in, out_f, bias.defined(),
                                        static_cast<int>(src_dt), static_cast<int>(dst_dt), activation, alpha,
                                        p.x_zero_point != 0, p.out_zero_point != 0, p.hash);
    struct Entry {
      dnnl::matmul prim;
      OptionalReorder wei;
      dnnl::memory::desc scratchpad;
    };
    auto e = cached<Entry>(key, [&] {
      const auto desc = bias.defined() ? dnnl::matmul::desc(src_md, any_wei, bmd, dst) : dnnl::matmul::desc(src_md, any_wei, dst);
      const dnnl::matmul::primitive_desc pd(desc, *attr, cpu_engine());
      return Entry{dnnl::matmul(pd), OptionalReorder::make(plain_wei, pd.weights_desc()), pd.scratchpad_desc()};
    });
    Tensor keep;
    int32_t zero_points[2];
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap_any(src_md, src)},
                                               {DNNL_ARG_WEIGHTS, int8_weights(ctx, e->wei, plain_wei, weight, p, key, keep)},
                                               {DNNL_ARG_DST, wrap_any(dst, out)},
                                               {DNNL_ARG_SCRATCHPAD, scratch_memory(e->scratchpad)}};
    if (bias.defined()) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bmd, cpu_engine(), const_cast<float*>(p.bias.data())));
    add_zero_points(args, p, out_dtype, zero_points);
    e->prim.execute(cpu_stream(), args);
  });
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(quantized_linear, onednn, uint8_t, int8_t)
