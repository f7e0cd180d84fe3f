// The exact int8 Winograd convolution (kernels/cpu/ref/quantized_winograd.h) on CPUs without VNNI: it
// takes 3x3 stride-1 NHWC convolutions there and nowhere else, and its results equal plain int32 sums
// with all 8 bits of the weights (-128 included), on both backends and 1, 2 and 3 threads, through
// partial tiles, odd channel counts, padding on one axis only, s8 inputs and an int8 residual. The
// suite runs this again under PD_CPU_ISA=avx2 (unit:int8_without_vnni), where the kernel is taken.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/ref/quantized_direct_common.h"
#include "cpu/ref/quantized_winograd.h"
#include "pd/core/cpu_features.h"
#include "pd/core/threads.h"
#include "pd/pd.h"
#include "registry.h"
#include "test_util.h"

namespace {

using pd::DType;
using pd::Tensor;

struct Case {
  int64_t N, H, W, C, CO, ph, pw;
  bool s8, residual;
};

// Values mostly at the ends of the range, where a saturating or overflowing kernel would show.
int64_t input_value(size_t i, bool s8) {
  const int64_t v = i % 7 == 0 ? 3 : 245 + static_cast<int64_t>(i % 11);
  return s8 ? v - 128 : v;
}
int8_t weight_value(size_t i) { return static_cast<int8_t>(i % 3 == 0 ? -128 : i % 5 == 0 ? 127 : static_cast<int>(i % 17) * 15 - 120); }

bool winograd_machine() {
#if defined(__x86_64__)
  using namespace pd::kernels::reference::int8_direct;
  return int8_path() == Path::avx2 && !pd::cpu_has_vnni();
#else
  return false;
#endif
}

}  // namespace

TEST_CASE("int8 Winograd convolution: exact sums with 8-bit weights, taken only without VNNI", "[quant][int8_isa]") {
  const std::vector<Case> cases{{1, 14, 14, 32, 32, 1, 1, false, false}, {2, 7, 9, 20, 24, 1, 1, true, true},
                                {1, 5, 6, 33, 40, 0, 1, false, true},    {1, 3, 3, 256, 16, 1, 1, false, false}};
  std::vector<pd::Backend> backends{pd::Backend::reference};
  for (const auto& k : pd::registry::registered_kernels("quantized_conv2d"))
    if (k.backend == pd::Backend::onednn && backends.size() == 1) backends.push_back(k.backend);
  const int threads = pd::num_threads();
  for (const Case& c : cases) {
    const int64_t OH = c.H + 2 * c.ph - 2, OW = c.W + 2 * c.pw - 2, zp = c.s8 ? -7 : 5, rzp = 100;
    std::vector<int64_t> xq(static_cast<size_t>(c.N * c.H * c.W * c.C));
    for (size_t i = 0; i < xq.size(); ++i) xq[i] = input_value(i, c.s8);
    std::vector<int8_t> wv(static_cast<size_t>(c.CO * c.C * 9));
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = weight_value(i);
    std::vector<uint8_t> rv(static_cast<size_t>(c.N * OH * OW * c.CO));
    for (size_t i = 0; i < rv.size(); ++i) rv[i] = static_cast<uint8_t>((i * 37) % 256);
    std::vector<float> wsv(static_cast<size_t>(c.CO));
    for (int64_t o = 0; o < c.CO; ++o) wsv[static_cast<size_t>(o)] = std::ldexp(1.0f, -8 - static_cast<int>(o % 4));  // exact in f32
    std::vector<float> want(rv.size());
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t o = 0; o < c.CO; ++o) {
            int64_t sum = 0;
            for (int64_t ch = 0; ch < c.C; ++ch)
              for (int64_t ky = 0; ky < 3; ++ky)
                for (int64_t kx = 0; kx < 3; ++kx) {
                  const int64_t h = oh + ky - c.ph, w = ow + kx - c.pw;
                  const int64_t v = h < 0 || h >= c.H || w < 0 || w >= c.W ? zp : xq[static_cast<size_t>(((n * c.H + h) * c.W + w) * c.C + ch)];
                  sum += (v - zp) * wv[static_cast<size_t>(((o * c.C + ch) * 3 + ky) * 3 + kx)];
                }
            const size_t at = static_cast<size_t>(((n * OH + oh) * OW + ow) * c.CO + o);
            want[at] = static_cast<float>(0.25 * wsv[static_cast<size_t>(o)] * static_cast<double>(sum) + (c.residual ? 0.5 * (rv[at] - rzp) : 0.0));
          }
    std::vector<int8_t> x8(xq.size());
    std::vector<uint8_t> xu(xq.size());
    for (size_t i = 0; i < xq.size(); ++i) x8[i] = static_cast<int8_t>(xq[i]), xu[i] = static_cast<uint8_t>(xq[i]);
    const Tensor x = c.s8 ? Tensor::from_vector<int8_t>(x8, {c.N, c.H, c.W, c.C}) : Tensor::from_vector<uint8_t>(xu, {c.N, c.H, c.W, c.C});
    const Tensor xz = c.s8 ? Tensor::scalar<int8_t>(static_cast<int8_t>(zp)) : Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp));
    const Tensor xs = Tensor::scalar<float>(0.25f), w = Tensor::from_vector<int8_t>(wv, {c.CO, c.C, 3, 3});
    const Tensor ws = Tensor::from_vector<float>(wsv, {c.CO});
    const Tensor r = c.residual ? Tensor::from_vector<uint8_t>(rv, {c.N, OH, OW, c.CO}) : Tensor();
    const Tensor rs = c.residual ? Tensor::scalar<float>(0.5f) : Tensor(), rz = c.residual ? Tensor::scalar<uint8_t>(rzp) : Tensor();
    const Tensor exact = Tensor::from_vector<float>(want, {c.N, OH, OW, c.CO});
    INFO("case " << c.N << "x" << c.H << "x" << c.W << "x" << c.C << " -> " << c.CO << ", int8 path " << pd::int8_path_name());
    {  // the kernel itself: taken exactly where the machine has AVX2 without VNNI
      Tensor out = pd::ops::zeros({c.N, OH, OW, c.CO}, DType::f32);
      const bool took = pd::kernels::reference::quantized_conv2d_winograd(
          pd::KernelContext{}, x, xs, xz, w, ws, Tensor(), r, rs, rz, Tensor(), Tensor(), {1, 1}, {c.ph, c.pw}, {1, 1}, 1, "none", 0.0,
          /*channels_last=*/true, DType::f32, out);
      CHECK(took == winograd_machine());
      if (took) CHECK(pd::test::max_abs_diff(out, exact) == 0.0f);
    }
    std::vector<Tensor> kept;  // alive, so that no result's memory holds an earlier one's values
    for (const pd::Backend backend : backends)
      for (const int t : {1, 2, 3}) {
        pd::ScopedKernelBackend on(backend);
        pd::set_num_threads(t);
        INFO("backend " << static_cast<int>(backend) << ", " << t << " threads");
        kept.push_back(pd::ops::quantized_conv2d(x, xs, xz, w, ws, {}, r, rs, rz, {}, {}, {1, 1}, {c.ph, c.pw}, {1, 1}, 1, "none", 0.0,
                                                 /*channels_last=*/true));
        // oneDNN without VNNI halves 8-bit weights where the Winograd kernel does not take the call
        if (backend == pd::Backend::reference || pd::cpu_has_vnni() || winograd_machine())
          CHECK(pd::test::max_abs_diff(kept.back(), exact) == 0.0f);
      }
  }
  pd::set_num_threads(threads);
}
