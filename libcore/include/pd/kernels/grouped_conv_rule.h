// Which grouped convolutions the kernels take on channel blocks of 16 (cpu/ref/grouped_conv.h): the
// channel_blocking pass keeps them in a chain of blocks on AVX-512 only where one does.
#pragma once
#include <cstdint>

namespace pd::kernels {

constexpr int64_t kGroupWidth = 8;  // channels a group, in and out: two groups a block of 16

// cin / cout: the convolution's channels; kh x kw its window.
inline bool grouped8_fits(int64_t cin, int64_t cout, int64_t groups, int64_t kh, int64_t kw) {
  return groups > 1 && cin == cout && cin == groups * kGroupWidth && kh == kw && (kh == 1 || kh == 3 || kh == 5);
}

}  // namespace pd::kernels
