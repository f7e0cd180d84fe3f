// gather_channel_blocks' vector kernels (channel_gather.h) compiled for one instruction set: a block of
// the widest vector's lanes (AVX-512: 16, AVX2: 8) a step. The build compiles this file once per set
// (pd_add_isa_variants, libcore/CMakeLists.txt).
#include <algorithm>
#include <cstdint>

#include "cpu/ref/channel_gather.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH(PD_ISA_TARGET)

namespace pd::kernels::reference {
namespace {

// Each pixel's output vector: zero, then every source vector permuted into the lanes it supplies.
template <int L>
void gather(const std::vector<GatherSource>& sources, const float* const* in, int64_t hw, int64_t p0, int64_t p1, float* out) {
  struct Prepared {
    const float* src;
    int32_t idx[L];
    int32_t mask[L];  // -1 in the lanes this source supplies
  };
  Prepared prepared[L];  // an output vector has at most L sources
  int count = 0;
  for (const GatherSource& s : sources) {
    Prepared& p = prepared[count++];
    p.src = in[s.input] + s.block * hw * L;
    for (int l = 0; l < L; ++l) p.idx[l] = s.idx[l], p.mask[l] = (s.lanes >> l) & 1 ? -1 : 0;
  }
  if constexpr (L == 16) {
    __m512i idx[16];
    __mmask16 mask[16];
    for (int s = 0; s < count; ++s) {
      idx[s] = _mm512_loadu_si512(prepared[s].idx);
      mask[s] = _mm512_cmpneq_epi32_mask(_mm512_loadu_si512(prepared[s].mask), _mm512_setzero_si512());
    }
    for (int64_t p = p0; p < p1; ++p) {
      __m512 v = _mm512_setzero_ps();
      for (int s = 0; s < count; ++s) v = _mm512_mask_permutexvar_ps(v, mask[s], idx[s], _mm512_loadu_ps(prepared[s].src + p * 16));
      _mm512_storeu_ps(out + p * 16, v);
    }
  } else {
    __m256i idx[8];
    __m256 mask[8];
    for (int s = 0; s < count; ++s) {
      idx[s] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(prepared[s].idx));
      mask[s] = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(prepared[s].mask)));
    }
    for (int64_t p = p0; p < p1; ++p) {
      __m256 v = _mm256_setzero_ps();
      for (int s = 0; s < count; ++s)
        v = _mm256_blendv_ps(v, _mm256_permutevar8x32_ps(_mm256_loadu_ps(prepared[s].src + p * 8), idx[s]), mask[s]);
      _mm256_storeu_ps(out + p * 8, v);
    }
  }
}

// NHWC: each output block of each pixel from its sources' windows of L channels (masked where a window
// runs past its input's channels, and where the last block runs past the output's).
template <int L>
void gather_nhwc(const GatherPlan& plan, const float* const* in, const int64_t* channels, int64_t pixels, int64_t out_channels,
                 float* out) {
  for (size_t ob = 0; ob < plan.sources.size(); ++ob) {
    const auto& sources = plan.sources[ob];
    const int count = static_cast<int>(sources.size());
    const float* src[L];
    int64_t stride[L];
    int64_t valid[L];  // lanes of the window inside the input's channels
    for (int s = 0; s < count; ++s) {
      const GatherSource& g = sources[static_cast<size_t>(s)];
      src[s] = in[g.input] + g.block * L, stride[s] = channels[g.input];
      valid[s] = std::min<int64_t>(L, channels[g.input] - g.block * L);
    }
    const int64_t out_valid = std::min<int64_t>(L, out_channels - static_cast<int64_t>(ob) * L);
    float* dst = out + static_cast<int64_t>(ob) * L;
    if constexpr (L == 16) {
      __m512i idx[16];
      __mmask16 mask[16], load[16];
      for (int s = 0; s < count; ++s) {
        const GatherSource& g = sources[static_cast<size_t>(s)];
        idx[s] = _mm512_loadu_si512(g.idx);
        mask[s] = static_cast<__mmask16>(g.lanes);
        load[s] = static_cast<__mmask16>((1u << valid[s]) - 1);
      }
      const auto store = static_cast<__mmask16>((1u << out_valid) - 1);
      for (int64_t p = 0; p < pixels; ++p) {
        __m512 v = _mm512_setzero_ps();
        for (int s = 0; s < count; ++s)
          v = _mm512_mask_permutexvar_ps(v, mask[s], idx[s], _mm512_maskz_loadu_ps(load[s], src[s] + p * stride[s]));
        _mm512_mask_storeu_ps(dst + p * out_channels, store, v);
      }
    } else {
      __m256i idx[8], load[8];
      __m256 mask[8];
      const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      for (int s = 0; s < count; ++s) {
        const GatherSource& g = sources[static_cast<size_t>(s)];
        int32_t m[8];
        for (int l = 0; l < 8; ++l) m[l] = (g.lanes >> l) & 1 ? -1 : 0;
        idx[s] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.idx));
        mask[s] = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(m)));
        load[s] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(valid[s])), lane);
      }
      const __m256i store = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(out_valid)), lane);
      for (int64_t p = 0; p < pixels; ++p) {
        __m256 v = _mm256_setzero_ps();
        for (int s = 0; s < count; ++s)
          v = _mm256_blendv_ps(v, _mm256_permutevar8x32_ps(_mm256_maskload_ps(src[s] + p * stride[s], load[s]), idx[s]), mask[s]);
        _mm256_maskstore_ps(dst + p * out_channels, store, v);
      }
    }
  }
}

}  // namespace

// The AVX2 form takes blocks of 8, the AVX-512 one blocks of 16.
void PD_ISA_FN(gather_block)(const std::vector<GatherSource>& sources, const float* const* in, int64_t hw, int64_t p0, int64_t p1,
                              float* out) {
  gather<simd::PD_ISA::L>(sources, in, hw, p0, p1, out);
}

void PD_ISA_FN(gather_pixels)(const GatherPlan& plan, const float* const* in, const int64_t* channels, int64_t pixels,
                              int64_t out_channels, float* out) {
  gather_nhwc<simd::PD_ISA::L>(plan, in, channels, pixels, out_channels, out);
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: gather_channel_blocks takes the lane-by-lane loop

namespace pd::kernels::reference {
void PD_ISA_FN(gather_block)(const std::vector<GatherSource>&, const float* const*, int64_t, int64_t, int64_t, float*) {}
void PD_ISA_FN(gather_pixels)(const GatherPlan&, const float* const*, const int64_t*, int64_t, int64_t, float*) {}
}  // namespace pd::kernels::reference
#endif
