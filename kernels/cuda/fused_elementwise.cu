// fused_elementwise on CUDA, with the semantics of kernels/cpu/ref/fused_elementwise.cc: `expr` (the
// language of pd/kernels/elementwise_expr.h) over the inputs xs, broadcast as in NumPy, in one pass.
//
// The host parses the expression with the CPU's parser (ewise::parse: the same checks and error text)
// and flattens its tree into a small postfix program (load input k / apply fn, with the fn's float
// constants), passed to the kernel by value with the inputs' broadcast strides. Each thread evaluates
// the program for its output elements on a small stack: intermediates never leave the thread, so the
// kernel reads every input once and writes the output once however long the chain. Operands are
// emitted in Sethi-Ullman order (the subtree needing more stack first; the binary op then knows its
// operands are swapped), which bounds the stack by log2 of the leaves rather than the tree's depth.
// The functions are elementwise_ops.h's scalar formulas, as the generated CUDA elementwise kernels
// (cuda_elementwise.cu) use them; arithmetic runs in acc_t<T> (float for f16 / bf16).
#include <algorithm>
#include <string>
#include <vector>

#include "cuda/cuda_common.cuh"
#include "elementwise_ops.h"
#include "pd/kernels/elementwise_expr.h"

namespace pd::kernels::cuda {
namespace {

// What one launch carries by value (kept under the classic 4 KB parameter limit).
constexpr int kFeMaxInputs = 24;
constexpr int kFeMaxDims = 8;
constexpr int kFeMaxCode = 192;
constexpr int kFeMaxConsts = 64;
constexpr int kFeStack = 16;

enum : uint8_t { kLoad = 0, kUnary = 1, kBinary = 2, kBinarySwapped = 3 };
enum : uint8_t { kFlat = 0, kSplat = 1, kGather = 2 };

struct FeInstr {
  uint8_t kind;  // kLoad: push input `arg`; else fn over the top one or two values (kBinarySwapped: top is x)
  uint8_t fn;    // an EwiseFn
  uint16_t arg;  // kLoad: the input; else the index of fn's first constant
};

template <typename D, typename C>
struct FeProgram {
  const D* in[kFeMaxInputs];
  int64_t strides[kFeMaxInputs][kFeMaxDims];  // kGather inputs: per (merged) output dim, 0 where broadcast
  int64_t shape[kFeMaxDims];                  // the output's dims, adjacent ones merged where every input allows
  uint8_t mode[kFeMaxInputs];                 // kFlat: offset = output index; kSplat: 0; kGather: by strides
  int nd;
  int ncode;
  FeInstr code[kFeMaxCode];
  C consts[kFeMaxConsts];
};

// fn over x (and y for two operands) with its constants c: the generated table's formulas
// (elementwise_ops.h ewise_eval, as the CPU kernel evaluates them), so every op with a scalar formula is
// known here too.
template <typename C>
__device__ __forceinline__ C fe_apply(uint8_t fn, C x, C y, const C* c) {
  return dispatch_ewise(static_cast<EwiseFn>(fn), [&](auto f) { return ewise_eval<decltype(f)::value, C>(x, y, c); });
}

template <typename D, typename C>
__global__ void fused_elementwise_kernel(D* __restrict__ out, const FeProgram<D, C> p, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    C st[kFeStack];
    int sp = 0;
    for (int pc = 0; pc < p.ncode; ++pc) {
      const FeInstr ins = p.code[pc];
      if (ins.kind == kLoad) {
        const int k = ins.arg;
        int64_t off = i;
        if (p.mode[k] == kSplat) {
          off = 0;
        } else if (p.mode[k] == kGather) {
          off = 0;
          int64_t rem = i;
          for (int d = p.nd - 1; d >= 0; --d) {
            const int64_t q = rem / p.shape[d];
            off += (rem - q * p.shape[d]) * p.strides[k][d];
            rem = q;
          }
        }
        st[sp++] = load_as<C>(p.in[k][off]);
      } else if (ins.kind != kUnary) {
        const C top = st[--sp], under = st[sp - 1];
        st[sp - 1] = ins.kind == kBinarySwapped ? fe_apply<C>(ins.fn, top, under, nullptr)
                                               : fe_apply<C>(ins.fn, under, top, nullptr);
      } else {
        st[sp - 1] = fe_apply<C>(ins.fn, st[sp - 1], C(0), p.consts + ins.arg);
      }
    }
    out[i] = store_as<D>(st[0]);
  }
}

// The postfix program of a parsed expression, operands in Sethi-Ullman order.
class Flattener {
 public:
  explicit Flattener(const ewise::Program& prog) : prog_(prog), need_(prog.num_registers(), 0) {
    for (int r = 0; r < prog.num_registers(); ++r) need_[r] = need_of(r);
  }
  int stack_depth() const { return need_.back(); }
  // Appends register r's evaluation to code / consts (which may grow past the limits: checked after).
  void emit(int r, std::vector<FeInstr>& code, std::vector<double>& consts) const {
    if (r < prog_.num_inputs) {
      code.push_back({kLoad, 0, static_cast<uint16_t>(r)});
      return;
    }
    const ewise::Step& s = prog_.steps[static_cast<size_t>(r - prog_.num_inputs)];
    uint8_t kind = s.args.size() == 2 ? kBinary : kUnary;
    if (s.args.size() == 2 && need_[s.args[1]] > need_[s.args[0]]) {
      emit(s.args[1], code, consts);
      emit(s.args[0], code, consts);
      kind = kBinarySwapped;
    } else {
      for (int a : s.args) emit(a, code, consts);
    }
    code.push_back({kind, static_cast<uint8_t>(s.fn), static_cast<uint16_t>(std::min<size_t>(consts.size(), 0xffff))});
    consts.insert(consts.end(), s.consts.begin(), s.consts.end());
  }

 private:
  int need_of(int r) const {
    if (r < prog_.num_inputs) return 1;
    const ewise::Step& s = prog_.steps[static_cast<size_t>(r - prog_.num_inputs)];
    if (s.args.size() == 1) return need_[s.args[0]];
    const int a = need_[s.args[0]], b = need_[s.args[1]];
    return a == b ? a + 1 : std::max(a, b);
  }
  const ewise::Program& prog_;
  std::vector<int> need_;
};

// Modes, strides and merged dims of the inputs against out's shape (broadcasting aligned on the right).
template <typename D, typename C>
void fill_geometry(const std::vector<Tensor>& xs, const Shape& os, int64_t n, FeProgram<D, C>& p) {
  const int nd = static_cast<int>(os.size());
  const int ni = static_cast<int>(xs.size());
  std::vector<std::vector<int64_t>> st(ni, std::vector<int64_t>(nd, 0));
  std::vector<int> gathered;
  for (int k = 0; k < ni; ++k) {
    const int64_t numel = xs[k].numel();
    p.mode[k] = numel == n ? kFlat : (numel == 1 ? kSplat : kGather);
    if (p.mode[k] != kGather) continue;
    gathered.push_back(k);
    const Shape& s = xs[k].shape();
    int64_t acc = 1;
    for (int d = nd - 1, sd = static_cast<int>(s.size()) - 1; d >= 0 && sd >= 0; --d, --sd) {
      st[k][d] = s[sd] == 1 ? 0 : acc;
      acc *= s[sd];
    }
  }
  // Dim d joins the one before when, for every gathered input, stride[before] == stride[d] * extent[d].
  std::vector<int64_t> ms;
  std::vector<std::vector<int64_t>> mst(ni);
  for (int d = 0; d < nd; ++d) {
    if (os[d] == 1) continue;
    bool merge = !ms.empty();
    for (int k : gathered) merge = merge && mst[k].back() == st[k][d] * os[d];
    if (merge) {
      ms.back() *= os[d];
      for (int k : gathered) mst[k].back() = st[k][d];
    } else {
      ms.push_back(os[d]);
      for (int k : gathered) mst[k].push_back(st[k][d]);
    }
  }
  PD_CHECK(gathered.empty() || static_cast<int>(ms.size()) <= kFeMaxDims, ErrorCode::kNotImplemented,
           "fused_elementwise on CUDA: broadcasting over {} non-mergeable dimensions (at most {})", ms.size(), kFeMaxDims);
  p.nd = gathered.empty() ? 0 : static_cast<int>(ms.size());
  for (int d = 0; d < p.nd; ++d) {
    p.shape[d] = ms[d];
    for (int k : gathered) p.strides[k][d] = mst[k][d];
  }
}

}  // namespace

template <typename T>
void fused_elementwise(const KernelContext& ctx, const std::vector<Tensor>& xs, const std::string& expr, Tensor& out) {
  const ewise::Program prog = ewise::parse("fused_elementwise", expr, static_cast<int>(xs.size()));
  const int64_t n = out.numel();
  if (n == 0) return;
  const Flattener flat(prog);
  std::vector<FeInstr> code;
  std::vector<double> consts;
  flat.emit(prog.num_registers() - 1, code, consts);
  PD_CHECK(static_cast<int>(xs.size()) <= kFeMaxInputs && static_cast<int>(code.size()) <= kFeMaxCode &&
               static_cast<int>(consts.size()) <= kFeMaxConsts && flat.stack_depth() <= kFeStack,
           ErrorCode::kNotImplemented,
           "fused_elementwise on CUDA: an expression of {} inputs, {} loads and ops, {} constants and stack depth {} "
           "(at most {}, {}, {} and {})",
           xs.size(), code.size(), consts.size(), flat.stack_depth(), kFeMaxInputs, kFeMaxCode, kFeMaxConsts, kFeStack);
  using D = dev_t<T>;
  using C = acc_t<T>;
  FeProgram<D, C> p{};
  for (size_t k = 0; k < xs.size(); ++k) p.in[k] = dptr<T>(xs[k]);
  fill_geometry(xs, out.shape(), n, p);
  p.ncode = static_cast<int>(code.size());
  std::copy(code.begin(), code.end(), p.code);
  for (size_t k = 0; k < consts.size(); ++k) p.consts[k] = static_cast<C>(consts[k]);
  fused_elementwise_kernel<D, C><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(out), p, n);
  PD_CUDA_CHECK_LAUNCH("fused_elementwise");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(fused_elementwise, cuda, float, double, ::pd::float16, ::pd::bfloat16)
