// gather_channel_blocks' and gather_channels' plan: for each output block, the input vectors its lanes
// come from, as the vector kernels read them (one permute of a source vector into the lanes it
// supplies, per pixel).
#pragma once
#include <cstdint>
#include <vector>

namespace pd::kernels::reference {

constexpr int kMaxGatherLanes = 64;  // channel_block_shape_rules.cc's largest block

// One source vector of an output block: block `block` of input `input`, whose lane idx[l] goes to output
// lane l for each l set in `lanes` (bit l).
struct GatherSource {
  int64_t input = 0, block = 0;
  uint64_t lanes = 0;
  int32_t idx[kMaxGatherLanes] = {};
};

// sources[ob]: the sources of output block ob (lanes no source sets stay zero).
struct GatherPlan {
  int64_t L = 0;
  std::vector<std::vector<GatherSource>> sources;
};

// channels[k]: input k's channels; index: output channel -> channel of the inputs taken in order.
GatherPlan gather_plan(const std::vector<int64_t>& channels, const std::vector<int64_t>& index, int64_t L);

// Pixels [p0, p1) of one output block of one image of hw pixels, f32 on whole vectors
// (isa/channel_gather_rows.cc: the AVX2 form for blocks of 8, the AVX-512 one for blocks of 16); `in[k]`
// points at the image's first block of input k, `out` at the output block's first pixel.
void gather_block_avx2(const std::vector<GatherSource>& sources, const float* const* in, int64_t hw, int64_t p0, int64_t p1, float* out);
void gather_block_avx512(const std::vector<GatherSource>& sources, const float* const* in, int64_t hw, int64_t p0, int64_t p1,
                         float* out);

// gather_channels on NHWC pixels, f32 on whole vectors with gather_plan's sources as windows of L channels
// of a pixel (isa/channel_gather_rows.cc): in[k] points at input k's first pixel (channels[k] values a
// pixel), out at the first output pixel (out_channels a pixel); a window that runs past an input's
// channels is loaded, and the last output block stored, under a mask.
void gather_pixels_avx2(const GatherPlan& plan, const float* const* in, const int64_t* channels, int64_t pixels,
                        int64_t out_channels, float* out);
void gather_pixels_avx512(const GatherPlan& plan, const float* const* in, const int64_t* channels, int64_t pixels,
                          int64_t out_channels, float* out);

}  // namespace pd::kernels::reference
