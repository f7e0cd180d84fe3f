// fused_elementwise: a chain of elementwise ops in one pass over memory. The output is cut into blocks
// small enough for L1; each step of the compiled expression runs over one block into a register
// buffer, so intermediates never reach main memory. Inputs with the output's shape are read in
// place; broadcast inputs are gathered into their register first.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/common/parallel.h"
#include "elementwise_ops.h"
#include "kernels.h"
#include "pd/kernels/elementwise_expr.h"

namespace pd::kernels::reference {
namespace {

constexpr int64_t kBlock = 512;

template <typename T, typename F>
void map1(const T* a, T* d, int64_t len, F f) {
  for (int64_t i = 0; i < len; ++i) d[i] = f(a[i]);
}

template <typename T, typename F>
void map2(const T* a, const T* b, T* d, int64_t len, F f) {
  for (int64_t i = 0; i < len; ++i) d[i] = f(a[i], b[i]);
}

// One step over a block, with its op's formula (elementwise_ops.h), one loop per op.
template <typename T>
void run_step(const ewise::Step& s, const T* a, const T* b, T* d, int64_t len) {
  const T c[2] = {s.consts.size() > 0 ? static_cast<T>(s.consts[0]) : T(0), s.consts.size() > 1 ? static_cast<T>(s.consts[1]) : T(0)};
  dispatch_ewise(s.fn, [&](auto f) {
    constexpr EwiseFn F = decltype(f)::value;
    if constexpr (kEwiseFns[static_cast<size_t>(F)].tensors == 2)
      map2(a, b, d, len, [](T x, T y) { return ewise_eval<F>(x, y, static_cast<const T*>(nullptr)); });
    else
      map1(a, d, len, [c](T x) { return ewise_eval<F>(x, T(0), c); });
  });
}

// How one input is read: in place (same shape), as one repeated value, or gathered through
// per-output-dim strides (0 along broadcast dims).
struct InputAccess {
  enum Kind { kDirect, kSplat, kGather } kind;
  Shape strides;
};

InputAccess access_of(const Shape& in, const Shape& out) {
  if (in == out) return {InputAccess::kDirect, {}};
  if (shape_numel(in) == 1) return {InputAccess::kSplat, {}};
  Shape strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  int64_t stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    strides[lead + d] = in[d] == 1 ? 0 : stride;
    stride *= in[d];
  }
  return {InputAccess::kGather, strides};
}

// Output elements [start, start + len) of a broadcast input: the output index is taken apart once, then
// walked run by run along the last dim (a copy, a fill where that dim is broadcast, else a strided loop).
template <typename T>
void gather(const T* src, const Shape& out_shape, const Shape& strides, int64_t start, int64_t len, T* dst) {
  const size_t nd = out_shape.size();
  std::vector<int64_t> idx(nd);
  int64_t rest = start, off = 0;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = rest % out_shape[d];
    rest /= out_shape[d];
    off += idx[d] * strides[d];
  }
  const int64_t last_extent = out_shape[nd - 1], step = strides[nd - 1];
  for (int64_t i = 0; i < len;) {
    const int64_t run = std::min(len - i, last_extent - idx[nd - 1]);
    if (step == 0) std::fill_n(dst + i, run, src[off]);
    else if (step == 1) std::copy_n(src + off, run, dst + i);
    else for (int64_t j = 0; j < run; ++j) dst[i + j] = src[off + j * step];
    i += run;
    idx[nd - 1] += run;
    off += run * step;
    for (size_t d = nd - 1; d > 0 && idx[d] == out_shape[d]; --d) {  // carry into the dims before
      off += strides[d - 1] - idx[d] * strides[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

}  // namespace

template <typename T>
void fused_elementwise(const KernelContext& ctx, const std::vector<Tensor>& xs, const std::string& expr, Tensor& out) {
  const ewise::Program prog = ewise::parse("fused_elementwise", expr, static_cast<int>(xs.size()));
  const int64_t n = out.numel();
  if (n == 0) return;
  std::vector<InputAccess> access;
  for (const Tensor& x : xs) access.push_back(access_of(x.shape(), out.shape()));
  const int regs = prog.num_registers();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  T* od = out.data<T>();
  cpu::parallel_for(blocks, kBlock * static_cast<int64_t>(prog.steps.size()), [&](int64_t b) {
    const int64_t start = b * kBlock, len = std::min(kBlock, n - start);
    thread_local std::vector<T> buffer;
    buffer.resize(static_cast<size_t>(regs * kBlock));
    std::vector<const T*> reg(static_cast<size_t>(regs));
    for (size_t i = 0; i < xs.size(); ++i) {
      const T* src = xs[i].data<T>();
      T* slot = buffer.data() + i * kBlock;
      switch (access[i].kind) {
        case InputAccess::kDirect: reg[i] = src + start; break;
        case InputAccess::kSplat: std::fill(slot, slot + len, src[0]), reg[i] = slot; break;
        case InputAccess::kGather: gather(src, out.shape(), access[i].strides, start, len, slot), reg[i] = slot; break;
      }
    }
    for (size_t k = 0; k < prog.steps.size(); ++k) {
      const ewise::Step& s = prog.steps[k];
      const size_t r = xs.size() + k;
      // The last step writes the output block itself.
      T* dst = k + 1 == prog.steps.size() ? od + start : buffer.data() + r * kBlock;
      run_step<T>(s, reg[static_cast<size_t>(s.args[0])], s.args.size() > 1 ? reg[static_cast<size_t>(s.args[1])] : nullptr,
                  dst, len);
      reg[r] = dst;
    }
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(fused_elementwise, reference, float, double)
