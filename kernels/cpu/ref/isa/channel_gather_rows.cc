// gather_channel_blocks' vector kernels (channel_gather.h) compiled for one instruction set: a block of
// the widest vector's lanes (AVX-512: 16, AVX2: 8) a step. The build compiles this file once per set
// (pd_add_isa_variants, libcore/CMakeLists.txt).
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
void gather(const std::vector<GatherSource>& sources, const float* const* in, int64_t hw, float* out) {
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
    for (int64_t p = 0; p < hw; ++p) {
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
    for (int64_t p = 0; p < hw; ++p) {
      __m256 v = _mm256_setzero_ps();
      for (int s = 0; s < count; ++s)
        v = _mm256_blendv_ps(v, _mm256_permutevar8x32_ps(_mm256_loadu_ps(prepared[s].src + p * 8), idx[s]), mask[s]);
      _mm256_storeu_ps(out + p * 8, v);
    }
  }
}

}  // namespace

// The AVX2 form takes blocks of 8, the AVX-512 one blocks of 16.
void PD_ISA_FN(gather_block)(const std::vector<GatherSource>& sources, const float* const* in, int64_t hw, float* out) {
  gather<simd::PD_ISA::L>(sources, in, hw, out);
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: gather_channel_blocks takes the lane-by-lane loop

namespace pd::kernels::reference {
void PD_ISA_FN(gather_block)(const std::vector<GatherSource>&, const float* const*, int64_t, float*) {}
}  // namespace pd::kernels::reference
#endif
