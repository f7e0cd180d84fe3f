// quantized_linear on oneDNN's int8 matmul: u8 / s8 activations with their zero point, the s8 weight
// read as its transpose and packed once, and the epilogue fused (quantized_common.h). Up to 4 rows go to
// the direct kernel (cpu/ref/quantized_direct.h), which serves them faster.
#include "cpu/onednn/matmul_common.h"
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
  // Split into row blocks as the f32 linear is (matmul_common.h): a ViT's int8 linears on OpenMP's team,
  // between layer norms and attention on the kernels' pool, took 0.5 ms each where one thread needs
  // 20 us (the two teams' spinning threads taking turns by the OS's time slice).
  const LinearBlocks split = linear_blocks(m, in, out_f);
  guarded("quantized_linear", [&] {
    const dt src_dt = onednn_dtype(src.dtype()), dst_dt = onednn_dtype(out_dtype);
    // weight [out_f, in] read as its transpose [in, out_f].
    const dnnl::memory::desc plain_wei(dims{in, out_f}, dt::s8, tag::ba), any_wei(dims{in, out_f}, dt::s8, tag::any),
        bmd = plain_desc(dims{1, out_f});
    struct Entry {
      dnnl::memory::desc src, dst;
      dnnl::matmul prim;
      OptionalReorder wei;
      dnnl::memory::desc scratchpad;
    };
    struct Block {
      std::shared_ptr<Entry> e;
      dnnl::memory weights;
      Tensor keep;  // a 7-bit copy of the weight while it is read
    };
    // The primitive for `rows` rows (it picks its own packed weight layout) and the weight packed for it.
    const auto block = [&](int64_t rows) {
      const std::string key = fmt::format("quantized_linear:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{:x}{}", rows, in, out_f, bias.defined(),
                                          static_cast<int>(src_dt), static_cast<int>(dst_dt), activation, alpha,
                                          p.x_zero_point != 0, p.out_zero_point != 0, p.hash, split.one_thread ? ":t1" : "");
      Block b;
      b.e = cached<Entry>(key, [&] {
        OneThreadIf single(split.one_thread);  // oneDNN splits the work by the thread count it sees when the primitive is made
        const dnnl::memory::desc src_md(dims{rows, in}, src_dt, tag::ab), dst(dims{rows, out_f}, dst_dt, tag::ab);
        const auto desc = bias.defined() ? dnnl::matmul::desc(src_md, any_wei, bmd, dst) : dnnl::matmul::desc(src_md, any_wei, dst);
        const dnnl::matmul::primitive_desc pd(desc, *attr, cpu_engine());
        return Entry{src_md, dst, dnnl::matmul(pd), OptionalReorder::make(plain_wei, pd.weights_desc()), pd.scratchpad_desc()};
      });
      b.weights = int8_weights(ctx, b.e->wei, plain_wei, weight, p, key, b.keep);
      return b;
    };
    const Block full = block(split.rows);
    const int64_t last_rows = split.rows_of(split.blocks - 1, m);
    const Block last = last_rows == split.rows ? full : block(last_rows);
    auto* const src_bytes = static_cast<uint8_t*>(src.raw_data());
    auto* const out_bytes = static_cast<uint8_t*>(out.raw_data());
    const size_t out_size = dtype_size(out_dtype);
    const auto run = [&](int64_t b) {
      const Block& k = b + 1 == split.blocks ? last : full;
      const int64_t r0 = b * split.rows;
      std::unordered_map<int, dnnl::memory> args{
          {DNNL_ARG_SRC, dnnl::memory(k.e->src, cpu_engine(), src_bytes + r0 * in)},
          {DNNL_ARG_WEIGHTS, k.weights},
          {DNNL_ARG_DST, dnnl::memory(k.e->dst, cpu_engine(), out_bytes + static_cast<size_t>(r0 * out_f) * out_size)}};
      if (bias.defined()) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bmd, cpu_engine(), const_cast<float*>(p.bias.data())));
      int32_t zero_points[2];  // read by the primitive during the call
      add_zero_points(args, p, out_dtype, zero_points);
      run_primitive(k.e->prim, args, k.e->scratchpad, split.one_thread);
    };
    if (split.blocks == 1) return run(0);
    parallel_items(split.blocks, run);
  });
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(quantized_linear, onednn, uint8_t, int8_t)
