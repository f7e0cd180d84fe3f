// add / sub / mul / div with NumPy broadcasting through the oneDNN binary primitive.
#include <algorithm>

#include "cpu/common/elementwise.h"
#include "cpu/onednn/onednn_common.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

struct BinaryEntry {
  dnnl::memory::desc src0, src1, dst;
  dnnl::binary prim;
};

// `one_thread`: made while OneThreadIf holds (oneDNN splits the work by the thread count it sees then).
std::shared_ptr<BinaryEntry> binary_entry(dnnl::algorithm alg, const dims& a, const dims& b, const dims& o, bool one_thread) {
  std::string key = fmt::format("binary:{}:{}:{}:{}{}", static_cast<int>(alg), dims_key(a), dims_key(b), dims_key(o), one_thread ? ":t1" : "");
  return cached<BinaryEntry>(key, [&] {
    BinaryEntry e{plain_desc(a), plain_desc(b), plain_desc(o), {}};
    e.prim = dnnl::binary(dnnl::binary::primitive_desc(dnnl::binary::desc(alg, e.src0, e.src1, e.dst), cpu_engine()));
    return e;
  });
}

void run_binary(const BinaryEntry& e, const dnnl::memory& s0, const dnnl::memory& s1, const dnnl::memory& d) {
  e.prim.execute(cpu_stream(), {{DNNL_ARG_SRC_0, s0}, {DNNL_ARG_SRC_1, s1}, {DNNL_ARG_DST, d}});
}

// Operands of one shape need no broadcast, and the reference kernel's vector loop (binary_map) beats
// the primitive's per-call cost (a cache key formatted, memories wrapped: about 2 us, most of a
// [50, 64] residual add at batch 1). Ranks beyond oneDNN's go there too.
// So does an operand repeated along a run of out's extents (cpu::row_broadcast: a per-channel gate or
// bias), or whose rows of at least 16 values repeat (cpu::run_broadcast: Swin's attention mask), whose rows
// the reference loop runs on the kernels' pool, not OpenMP's team.
bool on_reference(const Tensor& x, const Tensor& y, const Tensor& out) {
  if (beyond_onednn_rank(out.dim()) || (x.shape() == out.shape() && y.shape() == out.shape())) return true;
  int64_t outer = 0, mid = 0, inner = 0;
  size_t lead = 0;
  const auto broadcast_runs = [&](const Shape& other) {  // cpu::run_broadcast: oneDNN's broadcast there was 6 ns a value
    return cpu::row_broadcast(other, out.shape(), outer, mid, inner) || cpu::run_broadcast(other, out.shape(), lead, inner);
  };
  return (x.shape() == out.shape() && broadcast_runs(y.shape())) || (y.shape() == out.shape() && broadcast_runs(x.shape()));
}

// Below this many results a broadcast runs on one thread: waking OpenMP's team costs more than the work
// (and beside another busy process, a time slice; see matmul_common.h).
constexpr int64_t kSingleThreadBinaryValues = int64_t{1} << 15;

void binary_op(const char* name, dnnl::algorithm alg, const Tensor& x, const Tensor& y, Tensor& out) {
  if (out.numel() == 0) return;
  guarded(name, [&] {
    OneThreadIf one_thread(out.numel() < kSingleThreadBinaryValues);
    dims od = to_dims(out.shape());
    dims xd = pad_left(to_dims(x.shape()), od.size());
    dims yd = pad_left(to_dims(y.shape()), od.size());
    dnnl::memory dst = wrap(plain_desc(od), out);
    dnnl::memory src1 = wrap(plain_desc(yd), y);
    if (xd == od) {
      run_binary(*binary_entry(alg, xd, yd, od, static_cast<bool>(one_thread)), wrap(plain_desc(xd), x), src1, dst);
      return;
    }
    // oneDNN 2.6 only broadcasts src1, so materialise the broadcast of x into out first:
    // out = (-0.0) + x is exact for every x (including +-0 and NaN), then run in place.
    std::fill_n(out.data<float>(), out.numel(), -0.0f);
    run_binary(*binary_entry(dnnl::algorithm::binary_add, od, xd, od, static_cast<bool>(one_thread)), dst, wrap(plain_desc(xd), x), dst);
    run_binary(*binary_entry(alg, od, yd, od, static_cast<bool>(one_thread)), dst, src1, dst);
  });
}

}  // namespace

template <typename T>
void add(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  if (on_reference(x, y, out)) return reference::add<float>(ctx, x, y, out);
  binary_op("add", dnnl::algorithm::binary_add, x, y, out);
}
template <typename T>
void sub(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  if (on_reference(x, y, out)) return reference::sub<float>(ctx, x, y, out);
  binary_op("sub", dnnl::algorithm::binary_sub, x, y, out);
}
template <typename T>
void mul(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  if (on_reference(x, y, out)) return reference::mul<float>(ctx, x, y, out);
  binary_op("mul", dnnl::algorithm::binary_mul, x, y, out);
}
template <typename T>
void div(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  if (on_reference(x, y, out)) return reference::div<float>(ctx, x, y, out);
  binary_op("div", dnnl::algorithm::binary_div, x, y, out);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(add, onednn, float)
PD_INSTANTIATE_KERNELS(sub, onednn, float)
PD_INSTANTIATE_KERNELS(mul, onednn, float)
PD_INSTANTIATE_KERNELS(div, onednn, float)
