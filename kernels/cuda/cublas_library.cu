// cuBLAS is loaded when a kernel first asks for a handle, not when a process starts. Linked directly,
// libcublasLt's start-up cost every process about 210 MB of resident memory and 60 ms, GPU or not
// (`pd-infer --version`, pd-train on the CPU). PaddlePaddle's dynload does the same for its CUDA
// libraries. The few cuBLAS entry points the kernels call are defined here with cuBLAS's own
// signatures; each forwards to the library's symbol, looked up once.
#include <dlfcn.h>

#include <string>
#include <vector>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {
namespace {

struct Library {
  void* blas = nullptr;
  std::string error;  // why it could not be loaded
};

// The first of `names` that dlopen takes; its error otherwise.
void* open_first(const std::vector<std::string>& names, std::string& error) {
  for (const std::string& name : names) {
    if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL)) return handle;
    const char* why = dlerror();
    error += (error.empty() ? "" : "; ") + std::string(why ? why : name);
  }
  return nullptr;
}

const Library& library() {
  static const Library lib = [] {
    Library l;
    const std::string major = std::to_string(CUBLAS_VER_MAJOR);
    // The toolkit's directory as found at build time, then the loader's search path (LD_LIBRARY_PATH).
    // cuBLASLt first and global, so that libcublas's dependency on it resolves to the same copy.
    const auto candidates = [&](const std::string& file) {
      return std::vector<std::string>{std::string(PD_CUDA_LIBRARY_DIR) + "/" + file, file};
    };
    if (open_first(candidates("libcublasLt.so." + major), l.error))
      l.blas = open_first(candidates("libcublas.so." + major), l.error);
    return l;
  }();
  return lib;
}

// cuBLAS's own function `name`, typed as the declaration `Fn` it is called through; null when the
// library or the symbol is missing (the caller then returns a failure status). dlsym on libcublas's
// handle also searches its dependencies, cuBLASLt among them.
template <typename Fn>
Fn resolve(const char* name) {
  void* handle = library().blas;
  return handle ? reinterpret_cast<Fn>(dlsym(handle, name)) : nullptr;
}

}  // namespace

void load_cublas() {
  const Library& l = library();
  PD_CHECK(l.blas != nullptr, ErrorCode::kNotImplemented, "cuBLAS {} could not be loaded: {}", CUBLAS_VER_MAJOR, l.error);
}

}  // namespace pd::kernels::cuda

// Each forwards to cuBLAS's definition, of type Fn; `failed` is what it returns when cuBLAS is not there.
#define PD_CUBLAS_FORWARD_AS(Fn, name, failed, ...)                   \
  static const auto real = ::pd::kernels::cuda::resolve<Fn>(#name); \
  return real ? real(__VA_ARGS__) : (failed)
#define PD_CUBLAS_FORWARD(name, failed, ...) PD_CUBLAS_FORWARD_AS(decltype(&name), name, failed, __VA_ARGS__)

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  PD_CUBLAS_FORWARD(cublasCreate_v2, CUBLAS_STATUS_NOT_INITIALIZED, handle);
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  PD_CUBLAS_FORWARD(cublasSetStream_v2, CUBLAS_STATUS_NOT_INITIALIZED, handle, stream);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                                       int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                                       int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                                       long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                       long long int strideC, int batchCount, cublasComputeType_t computeType,
                                                       cublasGemmAlgo_t algo) {
  // cublas_api.h adds an inline overload (computeType as cudaDataType, for old callers): named by type.
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                                cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*, void*,
                                cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
  PD_CUBLAS_FORWARD_AS(Fn, cublasGemmStridedBatchedEx, CUBLAS_STATUS_NOT_INITIALIZED, handle, transa, transb, m, n, k, alpha, A, Atype,
                       lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  PD_CUBLAS_FORWARD(cublasGetStatusName, "cuBLAS not loaded", status);
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  PD_CUBLAS_FORWARD(cublasGetStatusString, "cuBLAS not loaded", status);
}

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* handle) {
  PD_CUBLAS_FORWARD(cublasLtCreate, CUBLAS_STATUS_NOT_INITIALIZED, handle);
}

// cuBLASLt's matmul with an epilogue (linear_epilogue.cu).
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  PD_CUBLAS_FORWARD(cublasLtMatmulDescCreate, CUBLAS_STATUS_NOT_INITIALIZED, desc, compute, scale);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t bytes) {
  PD_CUBLAS_FORWARD(cublasLtMatmulDescSetAttribute, CUBLAS_STATUS_NOT_INITIALIZED, desc, attr, buf, bytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  PD_CUBLAS_FORWARD(cublasLtMatrixLayoutCreate, CUBLAS_STATUS_NOT_INITIALIZED, layout, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  PD_CUBLAS_FORWARD(cublasLtMatmulPreferenceCreate, CUBLAS_STATUS_NOT_INITIALIZED, pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  PD_CUBLAS_FORWARD(cublasLtMatmulPreferenceDestroy, CUBLAS_STATUS_NOT_INITIALIZED, pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                                 size_t bytes) {
  PD_CUBLAS_FORWARD(cublasLtMatmulPreferenceSetAttribute, CUBLAS_STATUS_NOT_INITIALIZED, pref, attr, buf, bytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                           cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                           cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                           cublasLtMatmulPreference_t pref, int requested,
                                                           cublasLtMatmulHeuristicResult_t results[], int* returned) {
  PD_CUBLAS_FORWARD(cublasLtMatmulAlgoGetHeuristic, CUBLAS_STATUS_NOT_INITIALIZED, handle, desc, a, b, c, d, pref, requested, results,
                    returned);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                                           cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta,
                                           const void* C, cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                                           cudaStream_t stream) {
  PD_CUBLAS_FORWARD(cublasLtMatmul, CUBLAS_STATUS_NOT_INITIALIZED, handle, desc, alpha, A, a, B, b, beta, C, c, D, d, algo, workspace,
                    workspace_bytes, stream);
}

}  // extern "C"
