// remainder on CUDA: x mod y with the sign of y (Python's %, torch.remainder), with NumPy broadcasting,
// as kernels/cpu/ref/binary.cc. x mod 0 is NaN for floats and 0 for integers; x mod -1 is 0 (computing it
// would overflow on the lowest value). The op has no `scalar:` formula in ops.yaml (its float and
// integer rules differ), so it is not generated into cuda_elementwise.cu: it is written here on the
// same broadcasting machinery (elementwise.cuh's map_elementwise; f16 / bf16 compute in float).
#include <limits>
#include <type_traits>

#include "cuda/elementwise.cuh"

namespace pd::kernels::cuda {
namespace {

struct RemainderOp {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (b == C(0)) return std::numeric_limits<C>::quiet_NaN();
      C r;
      if constexpr (std::is_same_v<C, float>) r = ::fmodf(a, b);
      else r = ::fmod(a, b);
      return r != C(0) && ((r < C(0)) != (b < C(0))) ? r + b : r;
    } else {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return C(0);
      const C r = static_cast<C>(a % b);
      return r != C(0) && ((r < C(0)) != (b < C(0))) ? static_cast<C>(r + b) : r;
    }
  }
};

}  // namespace

template <typename T>
void remainder(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  map_elementwise<T>(ctx, "remainder", RemainderOp{}, out, x, y);
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(remainder, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
