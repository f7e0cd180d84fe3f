// gather_channel_blocks (ops.yaml): channels gathered from channel blocks into channel blocks. Each
// output block is made, pixel by pixel, from the few input vectors its lanes come from (ShuffleNet's
// shuffle: two or four), a permute of each into its lanes on AVX2 / AVX-512, lane by lane otherwise.
// gather_channels: the same plan on NHWC pixels, an input's "blocks" windows of L of its channels.
#include "cpu/ref/channel_gather.h"

#include <algorithm>
#include <map>
#include <memory>
#include <type_traits>
#include <utility>

#include "cpu/common/parallel.h"
#include "cpu/common/widest.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::reference {

GatherPlan gather_plan(const std::vector<int64_t>& channels, const std::vector<int64_t>& index, int64_t L) {
  GatherPlan plan;
  plan.L = L;
  std::vector<int64_t> first(channels.size() + 1, 0);  // the inputs' first channel in the joined order
  for (size_t k = 0; k < channels.size(); ++k) first[k + 1] = first[k] + channels[k];
  const auto out_blocks = static_cast<int64_t>((index.size() + static_cast<size_t>(L) - 1) / static_cast<size_t>(L));
  plan.sources.resize(static_cast<size_t>(out_blocks));
  for (int64_t ob = 0; ob < out_blocks; ++ob) {
    std::map<std::pair<int64_t, int64_t>, GatherSource> by_vector;
    for (int64_t l = 0; l < L && ob * L + l < static_cast<int64_t>(index.size()); ++l) {
      const int64_t c = index[static_cast<size_t>(ob * L + l)];
      const auto k = static_cast<int64_t>(std::upper_bound(first.begin(), first.end(), c) - first.begin()) - 1;
      const int64_t within = c - first[static_cast<size_t>(k)];
      GatherSource& s = by_vector[{k, within / L}];
      s.input = k, s.block = within / L;
      s.lanes |= uint64_t{1} << l;
      s.idx[l] = static_cast<int32_t>(within % L);
    }
    for (auto& [key, s] : by_vector) plan.sources[static_cast<size_t>(ob)].push_back(s);
  }
  return plan;
}

namespace {

// A plan kept in the op's memo slot with what it was made from (an op's attributes do not change, but
// the slot may be shared with another call when there is no executor).
struct KeptPlan {
  std::vector<int64_t> channels, index;
  GatherPlan plan;
};

const GatherPlan& plan_for(const KernelContext& ctx, const std::vector<int64_t>& channels, const std::vector<int64_t>& index,
                           int64_t L, GatherPlan& local) {
  if (!ctx.memo) return local = gather_plan(channels, index, L);
  KeptPlan* kept = ctx.memo->get<KeptPlan>();
  if (!kept || kept->plan.L != L || kept->channels != channels || kept->index != index)
    kept = &ctx.memo->set(std::make_shared<KeptPlan>(KeptPlan{channels, index, gather_plan(channels, index, L)}));
  return kept->plan;
}

}  // namespace

template <typename T>
void gather_channel_blocks(const KernelContext& ctx, const std::vector<Tensor>& xs, const std::vector<int64_t>& channels,
                           const std::vector<int64_t>& index, Tensor& out) {
  const Shape& o = out.shape();
  const int64_t N = o[0], OB = o[1], HW = o[2] * o[3], L = o[4];
  if (out.numel() == 0) return;
  GatherPlan local;
  const GatherPlan& plan = plan_for(ctx, channels, index, L, local);
  using Block = void (*)(const std::vector<GatherSource>&, const float* const*, int64_t, int64_t, int64_t, float*);
  Block vector_block = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    if (L == 8) vector_block = cpu::widest<Block>(nullptr, gather_block_avx2, gather_block_avx2);
    if (L == 16) vector_block = cpu::widest<Block>(nullptr, nullptr, gather_block_avx512);
  }
  // Items (image, part of its pixels, output block): at batch 1 a band of pixels a thread, as the
  // pointwise convolutions on either side of ShuffleNet's shuffle split theirs (cpu::parallel_for_images).
  const int64_t parts = cpu::image_parts(N, HW);
  cpu::parallel_for_images(parts, N * parts * OB, (HW + parts - 1) / parts * L, [&](int64_t i) {
    const int64_t ob = i % OB, n = i / (OB * parts);
    const auto [p0, p1] = cpu::part_range(i / OB % parts, parts, HW);
    thread_local std::vector<const T*> in;
    in.resize(xs.size());
    for (size_t k = 0; k < xs.size(); ++k) in[k] = xs[k].data<T>() + n * xs[k].shape()[1] * HW * L;
    T* dst = out.data<T>() + (n * OB + ob) * HW * L;
    const std::vector<GatherSource>& sources = plan.sources[static_cast<size_t>(ob)];
    if constexpr (std::is_same_v<T, float>) {
      if (vector_block != nullptr) return vector_block(sources, in.data(), HW, p0, p1, dst);
    }
    std::fill(dst + p0 * L, dst + p1 * L, T(0));
    for (const GatherSource& s : sources) {
      const T* src = in[static_cast<size_t>(s.input)] + s.block * HW * L;
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t l = 0; l < L; ++l)
          if ((s.lanes >> l) & 1) dst[p * L + l] = src[p * L + s.idx[l]];
    }
  });
}

template <typename T>
void gather_channels(const KernelContext& ctx, const std::vector<Tensor>& xs, const std::vector<int64_t>& index, Tensor& out) {
  const Shape& o = out.shape();
  const int64_t pixels = o[0] * o[1] * o[2], C = o[3];
  if (out.numel() == 0) return;
  std::vector<int64_t> channels;
  for (const Tensor& x : xs) channels.push_back(x.shape()[3]);
  using Pixels = void (*)(const GatherPlan&, const float* const*, const int64_t*, int64_t, int64_t, float*);
  Pixels vector_pixels = nullptr;
  if constexpr (std::is_same_v<T, float>) vector_pixels = cpu::widest<Pixels>(nullptr, gather_pixels_avx2, gather_pixels_avx512);
  const int64_t L = cpu_has_avx512() ? 16 : 8;
  GatherPlan local;
  const GatherPlan& plan = plan_for(ctx, channels, index, L, local);
  constexpr int64_t kPixels = 64;  // a run of pixels a work item
  cpu::parallel_for((pixels + kPixels - 1) / kPixels, kPixels * C, [&](int64_t item) {
    const int64_t p0 = item * kPixels, count = std::min(kPixels, pixels - p0);
    thread_local std::vector<const T*> in;
    in.resize(xs.size());
    for (size_t k = 0; k < xs.size(); ++k) in[k] = xs[k].data<T>() + p0 * channels[k];
    T* dst = out.data<T>() + p0 * C;
    if constexpr (std::is_same_v<T, float>) {
      if (vector_pixels != nullptr) return vector_pixels(plan, in.data(), channels.data(), count, C, dst);
    }
    for (int64_t p = 0; p < count; ++p)
      for (size_t ob = 0; ob < plan.sources.size(); ++ob)
        for (const GatherSource& s : plan.sources[ob])
          for (int64_t l = 0; l < L; ++l)
            if ((s.lanes >> l) & 1) dst[p * C + static_cast<int64_t>(ob) * L + l] = in[static_cast<size_t>(s.input)][p * channels[static_cast<size_t>(s.input)] + s.block * L + s.idx[l]];
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(gather_channel_blocks, reference, float, double)
PD_INSTANTIATE_KERNELS(gather_channels, reference, float, double)
