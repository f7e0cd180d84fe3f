// cuBLASLt matmuls with a BIAS / RELU_BIAS epilogue (linear_epilogue.h). Descriptors and the
// heuristic's algorithm are made once per (device, type, M, N, K, relu) and kept: asking the heuristic
// on every call would cost more host time than a small layer's GEMM takes on the GPU.
#include "cuda/linear_epilogue.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace pd::kernels::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // what NVIDIA suggests for cuBLAS on Hopper
constexpr size_t kMaxPlans = 512;                    // beyond that, shapes go the plain way
constexpr uintptr_t kAlign = 16;                     // operands' alignment the plans assume (checked per call)

struct Plan {
  bool ok = false;  // cuBLASLt offered an algorithm
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

using Key = std::tuple<int, int, int64_t, int64_t, int64_t, bool>;

// Column-major view, as in matmul.cu: out^T[N, M] = W[N, K] (stored as a K x N column-major matrix,
// transposed) times x^T (x stored as K x M column-major).
Plan make_plan(const KernelContext& ctx, cudaDataType_t type, int64_t M, int64_t N, int64_t K, bool relu) {
  Plan p;
  PD_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  PD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
  PD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)));
  const cublasLtEpilogue_t epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  PD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  PD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, type, static_cast<uint64_t>(K), static_cast<uint64_t>(N), K));
  PD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, type, static_cast<uint64_t>(K), static_cast<uint64_t>(M), K));
  PD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.d, type, static_cast<uint64_t>(N), static_cast<uint64_t>(M), N));
  // The heuristic reads the bias pointer's alignment only: a stand-in with kAlign's.
  const void* bias_stand_in = reinterpret_cast<const void*>(uintptr_t{kAlign});
  PD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_stand_in, sizeof(bias_stand_in)));
  cublasLtMatmulPreference_t pref = nullptr;
  PD_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  PD_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes,
                                                       sizeof(kWorkspaceBytes)));
  // Algorithms that need only kAlign-byte operands (the default assumes 256).
  const uint32_t align = kAlign;
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    PD_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(cublaslt_handle(ctx), p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found);
  if (s == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    p.ok = true;
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
  }
  PD_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));  // read by the heuristic only
  return p;
}

}  // namespace

bool linear_bias_epilogue(const KernelContext& ctx, cudaDataType_t type, int64_t M, int64_t N, int64_t K, const void* x,
                          const void* weight, const void* bias, bool relu, void* out) {
  static std::mutex mu;
  static auto* plans = new std::map<Key, Plan>();  // never destroyed: kept until the process ends
  std::lock_guard<std::mutex> lock(mu);
  const Key key{ctx.place.index, static_cast<int>(type), M, N, K, relu};
  auto it = plans->find(key);
  if (it == plans->end()) {
    if (plans->size() >= kMaxPlans) return false;
    it = plans->emplace(key, make_plan(ctx, type, M, N, K, relu)).first;
  }
  const Plan& p = it->second;
  bool aligned = true;
  for (const void* ptr : {x, weight, bias, static_cast<const void*>(out)}) aligned = aligned && reinterpret_cast<uintptr_t>(ptr) % kAlign == 0;
  if (!p.ok || !aligned) return false;
  PD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float one = 1.0f, zero = 0.0f;
  void* ws = p.workspace ? workspace(ctx, p.workspace) : nullptr;
  PD_CUBLAS_CHECK(cublasLtMatmul(cublaslt_handle(ctx), p.desc, &one, weight, p.a, x, p.b, &zero, out, p.d, out, p.d, &p.algo, ws,
                                 p.workspace, stream_of(ctx)));
  return true;
}

}  // namespace pd::kernels::cuda
