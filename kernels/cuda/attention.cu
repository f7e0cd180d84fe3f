// scaled_dot_product_attention (forward and gradient) and qkv_attention on CUDA, with the semantics of
// kernels/cpu/ref/attention.cc: scores = (q * scale) k^T, then the mask (bool: false = -inf; additive:
// added; broadcast over [N, H, Lq, Lk] through zero strides) and the causal limit (key j > query i);
// softmax over the keys, dropout on the weights (attention_keep, a hash of the seed and the weight's
// flat index, so backward regenerates the mask); lse = max + log(sum), -inf with zeros out for a row
// with nothing to attend. Query head h reads kv head h / (H / Hk). Arithmetic in acc_t<T>.
//
// Plain, not flash attention (sequences here are short): the forward runs a block per query row over
// chunks of keys, a thread per key for the score and an online softmax across the chunks. The gradient
// runs a block per query row (dq, and each weight's dS = P (dP - delta) and P * dropout into a scratch
// [N, H, Lq, Lk]), then a block per key row (dk and dv sum the scratch over the query rows and heads
// that read it; no atomics, so the result is deterministic).
#include <cmath>
#include <limits>

#include "cuda/reduce_common.cuh"

namespace pd::kernels::cuda {
namespace {

constexpr int kAttnThreads = 128;  // also the keys per chunk: a thread per key
constexpr size_t kMaxShared = 48 * 1024;

enum MaskKind : int { kNoMask = 0, kBoolMask = 1, kAdditiveMask = 2 };

// Element strides of a [N, heads, L, E] operand over its batch, head and row axes (E is contiguous).
struct HeadStrides {
  int64_t n = 0, h = 0, l = 0;
};
HeadStrides contiguous_heads(int64_t heads, int64_t len, int64_t width) { return {heads * len * width, len * width, width}; }

struct Geometry {
  int64_t N = 0, H = 0, Hk = 0, Lq = 0, Lk = 0, E = 0, Ev = 0;
  double scale = 1, dropout = 0;
  bool causal = false;
  uint64_t seed = 0;
  int mask_kind = kNoMask;
  const void* mask = nullptr;
  int64_t mask_stride[4] = {0, 0, 0, 0};  // over [N, H, Lq, Lk]; 0 where broadcast
  HeadStrides qs, ks, vs, os;

  __device__ int64_t group() const { return H / Hk; }
};

Geometry geometry(const char* op, int64_t N, int64_t H, int64_t Hk, int64_t Lq, int64_t Lk, int64_t E, int64_t Ev,
                  const Tensor& mask, double dropout_p, bool is_causal, double scale, int64_t seed) {
  PD_CHECK(dropout_p >= 0 && dropout_p < 1, ErrorCode::kInvalidArgument,
           "{}: argument 'dropout_p' must be in [0, 1), but received {}", op, dropout_p);
  Geometry g;
  g.N = N, g.H = H, g.Hk = Hk, g.Lq = Lq, g.Lk = Lk, g.E = E, g.Ev = Ev;
  g.scale = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(E));
  g.dropout = dropout_p;
  g.causal = is_causal;
  g.seed = static_cast<uint64_t>(seed);
  if (mask.defined()) {
    g.mask_kind = mask.dtype() == DType::boolean ? kBoolMask : kAdditiveMask;
    g.mask = mask.raw_data();
    const Shape& ms = mask.shape();
    int64_t stride = 1;
    for (int64_t d = static_cast<int64_t>(ms.size()) - 1; d >= 0; --d) {
      g.mask_stride[4 - static_cast<int64_t>(ms.size()) + d] = ms[d] == 1 ? 0 : stride;
      stride *= ms[d];
    }
  }
  g.qs = contiguous_heads(H, Lq, E), g.os = contiguous_heads(H, Lq, Ev);
  g.ks = contiguous_heads(Hk, Lk, E), g.vs = contiguous_heads(Hk, Lk, Ev);
  return g;
}

// pd::kernels::attention_keep (pd/kernels/attention_dropout.h) on the device: it must stay the same
// function, so that the CPU and the GPU drop the same weights.
__device__ __forceinline__ bool attention_keep_dev(uint64_t seed, uint64_t index, double p) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 >= p;
}

template <typename A>
__device__ __forceinline__ A exp_of(A v) {
  if constexpr (std::is_same_v<A, float>) return expf(v);
  else return ::exp(v);
}

struct MaxOp {  // std::max(a, b): a NaN b is dropped
  template <typename A>
  __device__ A operator()(A a, A b) const { return a < b ? b : a; }
};
struct AddOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return a + b; }
};

// The masked score of query row i against key row kj (the scaled query in shared memory); the causal
// limit is the caller's (it stops before key i + 1).
template <typename D, typename A>
__device__ __forceinline__ A score(const Geometry& g, const A* qs, const D* __restrict__ kj, int64_t n, int64_t h, int64_t i,
                                   int64_t j) {
  A s = 0;
  for (int64_t e = 0; e < g.E; ++e) s += qs[e] * load_as<A>(kj[e]);
  if (g.mask_kind != kNoMask) {
    const int64_t* st = g.mask_stride;
    const int64_t at = n * st[0] + h * st[1] + i * st[2] + j * st[3];
    if (g.mask_kind == kBoolMask) {
      if (!static_cast<const bool*>(g.mask)[at]) s = -std::numeric_limits<A>::infinity();
    } else {
      s += load_as<A>(static_cast<const D*>(g.mask)[at]);
    }
  }
  return s;
}

// 1 / (1 - p) where weight (n, h, i, j) is kept, 0 where it is dropped.
template <typename A>
__device__ __forceinline__ A dropout_factor(const Geometry& g, int64_t n, int64_t h, int64_t i, int64_t j) {
  const auto index = static_cast<uint64_t>(((n * g.H + h) * g.Lq + i) * g.Lk + j);
  return attention_keep_dev(g.seed, index, g.dropout) ? A(1) / static_cast<A>(1 - g.dropout) : A(0);
}

// Shared memory: the scaled query row (E), the output accumulator (Ev), a chunk's weights (kAttnThreads).
template <typename D, typename A>
__global__ void attention_forward_kernel(Geometry g, const D* __restrict__ q, const D* __restrict__ k, const D* __restrict__ v,
                                         D* __restrict__ out, D* __restrict__ lse) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ A red[32];
  A* qs = reinterpret_cast<A*>(smem);
  A* acc = qs + g.E;
  A* w = acc + g.Ev;
  const A neg_inf = -std::numeric_limits<A>::infinity();
  const A sc = static_cast<A>(g.scale);
  const int t = threadIdx.x;
  const int64_t rows = g.N * g.H * g.Lq;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t nh = row / g.Lq, i = row % g.Lq, n = nh / g.H, h = nh % g.H, kvh = h / g.group();
    const D* qrow = q + n * g.qs.n + h * g.qs.h + i * g.qs.l;
    const D* kb = k + n * g.ks.n + kvh * g.ks.h;
    const D* vb = v + n * g.vs.n + kvh * g.vs.h;
    __syncthreads();  // the previous row is done with the shared buffers
    for (int64_t e = t; e < g.E; e += blockDim.x) qs[e] = load_as<A>(qrow[e]) * sc;
    for (int64_t e = t; e < g.Ev; e += blockDim.x) acc[e] = A(0);
    __syncthreads();
    A m = neg_inf, l = 0;
    const int64_t end = g.causal ? (i + 1 < g.Lk ? i + 1 : g.Lk) : g.Lk;
    for (int64_t j0 = 0; j0 < end; j0 += blockDim.x) {
      const int64_t j = j0 + t, cols = end - j0 < blockDim.x ? end - j0 : blockDim.x;
      const A s = j < end ? score<D, A>(g, qs, kb + j * g.ks.l, n, h, i, j) : neg_inf;
      const A mx = MaxOp{}(m, block_allreduce(s, MaxOp{}, red));
      if (mx == neg_inf) continue;  // everything so far is masked (uniform over the block)
      const A correction = exp_of(m - mx);
      const A p = j < end ? exp_of(s - mx) : A(0);
      l = l * correction + block_allreduce(p, AddOp{}, red);
      m = mx;
      w[t] = g.dropout > 0 && j < end ? p * dropout_factor<A>(g, n, h, i, j) : p;
      __syncthreads();
      for (int64_t e = t; e < g.Ev; e += blockDim.x) {
        A a = acc[e] * correction;
        for (int64_t c = 0; c < cols; ++c) a += w[c] * load_as<A>(vb[(j0 + c) * g.vs.l + e]);
        acc[e] = a;
      }
      __syncthreads();  // w is rewritten by the next chunk
    }
    D* orow = out + n * g.os.n + h * g.os.h + i * g.os.l;
    const bool empty = l == A(0);
    for (int64_t e = t; e < g.Ev; e += blockDim.x) orow[e] = store_as<D>(empty ? A(0) : acc[e] / l);
    if (lse != nullptr && t == 0) lse[row] = store_as<D>(empty ? neg_inf : m + ::log(l));
  }
}

// Per query row: delta = sum(grad * out), the weights P = exp(score - lse) (0 for a row with lse -inf),
// dP = (grad . v_j) * dropout, dS = P (dP - delta); dq = scale * sum_j dS k_j. dS and P * dropout go to
// ds / pz [N, H, Lq, Lk] for the key rows' pass (0 past the causal limit).
template <typename D, typename A>
__global__ void attention_grad_rows_kernel(Geometry g, const D* __restrict__ q, const D* __restrict__ k,
                                           const D* __restrict__ v, const D* __restrict__ out, const D* __restrict__ lse,
                                           const D* __restrict__ grad, D* __restrict__ dq, A* __restrict__ ds,
                                           A* __restrict__ pz) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ A red[32];
  A* qs = reinterpret_cast<A*>(smem);
  A* go = qs + g.E;
  A* dq_acc = go + g.Ev;
  A* w = dq_acc + g.E;
  const A neg_inf = -std::numeric_limits<A>::infinity();
  const A sc = static_cast<A>(g.scale);
  const int t = threadIdx.x;
  const int64_t rows = g.N * g.H * g.Lq;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t nh = row / g.Lq, i = row % g.Lq, n = nh / g.H, h = nh % g.H, kvh = h / g.group();
    const D* kb = k + (n * g.Hk + kvh) * g.Lk * g.E;
    const D* vb = v + (n * g.Hk + kvh) * g.Lk * g.Ev;
    __syncthreads();
    for (int64_t e = t; e < g.E; e += blockDim.x) {
      qs[e] = load_as<A>(q[row * g.E + e]) * sc;
      dq_acc[e] = A(0);
    }
    A part = 0;
    for (int64_t e = t; e < g.Ev; e += blockDim.x) {
      go[e] = load_as<A>(grad[row * g.Ev + e]);
      part += go[e] * load_as<A>(out[row * g.Ev + e]);
    }
    const A delta = block_allreduce(part, AddOp{}, red);  // also the barrier after the loads
    const A row_lse = load_as<A>(lse[row]);
    const int64_t end = g.causal ? (i + 1 < g.Lk ? i + 1 : g.Lk) : g.Lk;
    for (int64_t j0 = 0; j0 < g.Lk; j0 += blockDim.x) {
      const int64_t j = j0 + t, cols = g.Lk - j0 < blockDim.x ? g.Lk - j0 : blockDim.x;
      A dsv = 0, pzv = 0;
      if (j < end) {
        const A p = row_lse == neg_inf ? A(0) : exp_of(score<D, A>(g, qs, kb + j * g.E, n, h, i, j) - row_lse);
        A dp = 0;
        for (int64_t e = 0; e < g.Ev; ++e) dp += go[e] * load_as<A>(vb[j * g.Ev + e]);
        const A z = g.dropout > 0 ? dropout_factor<A>(g, n, h, i, j) : A(1);
        pzv = p * z;
        dsv = p * (dp * z - delta);
      }
      if (j < g.Lk) {
        ds[row * g.Lk + j] = dsv;
        pz[row * g.Lk + j] = pzv;
      }
      w[t] = dsv;
      __syncthreads();
      for (int64_t e = t; e < g.E; e += blockDim.x) {
        A a = dq_acc[e];
        for (int64_t c = 0; c < cols; ++c) a += w[c] * load_as<A>(kb[(j0 + c) * g.E + e]);
        dq_acc[e] = a;
      }
      __syncthreads();
    }
    for (int64_t e = t; e < g.E; e += blockDim.x) dq[row * g.E + e] = store_as<D>(dq_acc[e] * sc);
  }
}

// Per key row (n, kv head, j): dk = sum over the group's heads and query rows of dS * q * scale, dv =
// sum of P * dropout * grad. A thread per column.
template <typename D, typename A>
__global__ void attention_grad_keys_kernel(Geometry g, const D* __restrict__ q, const D* __restrict__ grad,
                                           const A* __restrict__ ds, const A* __restrict__ pz, D* __restrict__ dk,
                                           D* __restrict__ dv) {
  const A sc = static_cast<A>(g.scale);
  const int64_t keys = g.N * g.Hk * g.Lk;
  const int64_t width = g.E > g.Ev ? g.E : g.Ev;
  for (int64_t key = blockIdx.x; key < keys; key += gridDim.x) {
    const int64_t nk = key / g.Lk, j = key % g.Lk, n = nk / g.Hk, kvh = nk % g.Hk;
    const int64_t i0 = g.causal ? j : 0;  // earlier query rows do not see key j
    for (int64_t e = threadIdx.x; e < width; e += blockDim.x) {
      A dkv = 0, dvv = 0;
      for (int64_t h = kvh * g.group(); h < (kvh + 1) * g.group(); ++h) {
        const int64_t rbase = (n * g.H + h) * g.Lq;
        for (int64_t i = i0; i < g.Lq; ++i) {
          const int64_t row = rbase + i;
          if (e < g.E) dkv += ds[row * g.Lk + j] * (load_as<A>(q[row * g.E + e]) * sc);
          if (e < g.Ev) dvv += pz[row * g.Lk + j] * load_as<A>(grad[row * g.Ev + e]);
        }
      }
      if (e < g.E) dk[key * g.E + e] = store_as<D>(dkv);
      if (e < g.Ev) dv[key * g.Ev + e] = store_as<D>(dvv);
    }
  }
}

unsigned grid_for(int64_t items) { return static_cast<unsigned>(items < kMaxBlocks ? items : kMaxBlocks); }

size_t shared_bytes(const char* op, int64_t values, size_t elem) {
  const size_t bytes = static_cast<size_t>(values) * elem;
  PD_CHECK(bytes <= kMaxShared - 32 * 8, ErrorCode::kNotImplemented,
           "{} on CUDA: head dims too large for one block's shared memory ({} bytes)", op, bytes);
  return bytes;
}

template <typename T>
void attention_forward(const KernelContext& ctx, const char* op, const Geometry& g, const dev_t<T>* q,
                       const dev_t<T>* k, const dev_t<T>* v, dev_t<T>* out, dev_t<T>* lse) {
  using A = acc_t<T>;
  const int64_t rows = g.N * g.H * g.Lq;
  if (rows == 0) return;
  const size_t smem = shared_bytes(op, g.E + g.Ev + kAttnThreads, sizeof(A));
  attention_forward_kernel<dev_t<T>, A><<<grid_for(rows), kAttnThreads, smem, stream_of(ctx)>>>(g, q, k, v, out, lse);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

}  // namespace

template <typename T>
void scaled_dot_product_attention(const KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                  double dropout_p, bool is_causal, double scale, int64_t seed, Tensor& out, Tensor& lse) {
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const Geometry g = geometry("scaled_dot_product_attention", qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3], mask, dropout_p,
                              is_causal, scale, seed);
  attention_forward<T>(ctx, "scaled_dot_product_attention kernel launch", g, dptr<T>(q), dptr<T>(k), dptr<T>(v),
                       dptr<T>(out), dptr<T>(lse));
}

template <typename T>
void scaled_dot_product_attention_grad(const KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& out, const Tensor& lse, const Tensor& grad, const Tensor& mask,
                                       double dropout_p, bool is_causal, double scale, int64_t seed, Tensor& dq, Tensor& dk,
                                       Tensor& dv) {
  using D = dev_t<T>;
  using A = acc_t<T>;
  const char* op = "scaled_dot_product_attention_grad kernel launch";
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const Geometry g = geometry("scaled_dot_product_attention_grad", qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3], mask,
                              dropout_p, is_causal, scale, seed);
  cudaStream_t stream = stream_of(ctx);
  const int64_t rows = g.N * g.H * g.Lq, keys = g.N * g.Hk * g.Lk;
  const size_t weights = static_cast<size_t>(rows * g.Lk);
  A* ds = weights > 0 ? static_cast<A*>(workspace(ctx, 2 * weights * sizeof(A))) : nullptr;
  A* pz = ds == nullptr ? nullptr : ds + weights;
  if (rows > 0) {
    const size_t smem = shared_bytes(op, 2 * g.E + g.Ev + kAttnThreads, sizeof(A));
    attention_grad_rows_kernel<D, A><<<grid_for(rows), kAttnThreads, smem, stream>>>(
        g, dptr<T>(q), dptr<T>(k), dptr<T>(v), dptr<T>(out), dptr<T>(lse), dptr<T>(grad), dptr<T>(dq), ds, pz);
    check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  }
  if (keys > 0 && (g.E > 0 || g.Ev > 0)) {
    attention_grad_keys_kernel<D, A><<<grid_for(keys), kAttnThreads, 0, stream>>>(g, dptr<T>(q), dptr<T>(grad), ds, pz,
                                                                                    dptr<T>(dk), dptr<T>(dv));
    check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  }
}

// Heads packed along the last axis, qkv [N, L, (H + 2 Hk) E] -> out [N, L, H E], read and written in place
// through their strides.
template <typename T>
void qkv_attention(const KernelContext& ctx, const Tensor& qkv, int64_t num_heads, int64_t num_kv_heads, const Tensor& mask,
                   bool is_causal, double scale, Tensor& out) {
  const int64_t N = qkv.shape()[0], L = qkv.shape()[1], W = qkv.shape()[2], H = num_heads, Hk = num_kv_heads;
  const int64_t E = W / (H + 2 * Hk);
  Geometry g = geometry("qkv_attention", N, H, Hk, L, L, E, E, mask, 0.0, is_causal, scale, 0);
  g.qs = g.ks = g.vs = {L * W, E, W};
  g.os = {L * H * E, E, H * E};
  const dev_t<T>* base = dptr<T>(qkv);
  attention_forward<T>(ctx, "qkv_attention kernel launch", g, base, base + H * E, base + (H + Hk) * E, dptr<T>(out),
                       nullptr);
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(scaled_dot_product_attention, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(scaled_dot_product_attention_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(qkv_attention, cuda, float, double, ::pd::float16, ::pd::bfloat16)
