// A channel shuffle as ONNX exports ShuffleNet's: concat along the channels, reshape [N, g, C / g, H, W],
// transpose [0, 2, 1, 3, 4], reshape back [N, C, H, W], then a slice of its channels or the whole. The
// layout passes (channel_blocking on f32 channel blocks, int8_channels_last on NHWC) turn each read
// into one gather of the concat's inputs' channels.
#pragma once
#include <optional>
#include <vector>

#include "pd/ir/pass.h"

namespace pd::ir::passes {

// A read of a channel shuffle: the concat it shuffles and, for each channel read, the concat's channel.
struct ChannelShuffle {
  ValueId concat;
  std::vector<int64_t> index;
};

// The shuffle op i reads, when i is the shuffle's last reshape or a slice of its channels (axis 1, step
// 1) of an f32 concat of 4-D values along axis 1.
std::optional<ChannelShuffle> channel_shuffle_read(const Program& p, int32_t i);

// Whether shuffle read op i is the shuffle's last reshape read only by slices that are shuffle reads
// themselves: those are converted, and it is left to be swept.
bool read_only_by_slices(const Program& p, int32_t i);

// Whether concat op i is shuffled: some reshape -> transpose -> op after it is a channel_shuffle_read.
bool shuffle_source(const Program& p, int32_t i);

}  // namespace pd::ir::passes
