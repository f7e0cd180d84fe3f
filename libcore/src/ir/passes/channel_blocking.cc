// channel_blocking: runs chains of f32 convolutions in oneDNN's channel-blocked layout (nChw16c on
// AVX-512, nChw8c on AVX2; held as a plain 5-D tensor [N, C / b, H, W, b]) and keeps the tensors between
// them blocked, as onnxruntime's NCHWc transformer does. A plain conv2d / fused_conv2d makes oneDNN
// reorder its input into that layout and its output back on every call, which cost the residual example
// more than the convolutions' own work in its 1x1 and strided convolutions.
//
//   1. Candidates: conv2d / fused_conv2d on f32, groups 1, depthwise (groups = C_in = C_out:
//      MobileNet's, whose chains it would break), or groups of whole blocks (RegNet's on AVX2). Channels need not fill the last block: a 24-channel map
//      is held in 2 blocks of 16 with zero lanes past 24, as oneDNN (and onnxruntime's NCHWc) pads it;
//      MobileNetV2's 24-channel stage ran plain, between reorders, a third of its time. An input of at
//      fewer channels than a block (an image, a narrow map) is read plain. The 3x3 stride-1 ones on whole blocks go on to
//      conv_winograd, which runs Winograd on the blocks where that is faster.
//   2. Candidates joined by their data edges (one's result is another's input or residual) form
//      chains; only chains of two or more convolutions are converted, since a lone one would pay the same
//      two reorders as explicit ops.
//   3. In program order each converted conv becomes blocked_conv2d, reading its producers' blocked
//      results directly and to_channel_blocks of anything else, followed by from_channel_blocks for the
//      readers that are not converted. What nobody reads is swept at the end.
//   A concat along the channels of converted results, each in whole blocks, is the same concat of
//   their blocks along the block axis (SqueezeNet's fire modules, DenseNet's); plain, it cost a reorder
//   of every input and of the result.
//   A mul of a converted result by a factor per image and channel [N, C, 1, 1] (a squeeze-excitation's
//   gate: EfficientNet's, MobileNetV3's) joins the chain as scale_channel_blocks; plain, each of them
//   cost two reorders of the whole map, out of the blocks and back.
//   A max_pool2d of a converted convolution's result (ResNet's stem pool, between its 7x7 stem and its
//   first block) joins the chain too: each [H, W, b] block of an image is an NHWC image of b channels, so
//   max_pool2d_nhwc pools the blocks [N, C / b, H, W, b] as they are. Without it the stem was a lone
//   plain convolution (on OpenMP's team at batch 1) and the pool's output was reordered into blocks.
//   A channel shuffle of a concat of converted results (ShuffleNet's: concat, reshape [N, g, C / g, H, W],
//   transpose [0, 2, 1, 3, 4], reshape [N, C, H, W]), read whole or by slices of its channels, becomes one
//   gather_channel_blocks of the concat's inputs' blocks per read: plain, every unit paid a reorder out
//   of the blocks, the concat, the shuffle's copy and a reorder back in (21% of ShuffleNetV2's time at
//   batch 1, with channel halves of 58 that are not whole blocks).
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "channel_shuffle.h"
#include "passes.h"
#include "pd/kernels/grouped_conv_rule.h"

namespace pd::ir::passes {
namespace {

constexpr int64_t kMaxPlainChannels = 4;

bool is_conv(const Operation& op) { return (op.type == "conv2d" && !channels_last_op(op)) || op.type == "fused_conv2d"; }

// Union-find over op indices, for the chains.
struct Chains {
  std::vector<int32_t> parent;
  explicit Chains(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t root(int32_t i) { return parent[i] == i ? i : parent[i] = root(parent[i]); }
  void join(int32_t a, int32_t b) { parent[root(a)] = root(b); }
};

class ChannelBlocking final : public Pass {
 public:
  std::string name() const override { return "channel_blocking"; }
  bool lowering() const override { return true; }
  bool supports(const Target& t) const override { return t.has_backend(Backend::onednn) && t.has_isa(CpuIsa::avx2); }
  void set_target(const Target& t) override { block_ = t.has_isa(CpuIsa::avx512) ? 16 : 8; }
  std::string doc() const override {
    return "chains of conv2d / fused_conv2d -> blocked_conv2d on channel blocks (nChw16c / nChw8c), reordered only at "
           "the chain's edges";
  }
  bool match(const Program&, int32_t) const override { return false; }  // run() does the work
  void rewrite(Program&, int32_t, PassStats&) const override {}

  void run(Program& p, PassStats& stats) const override {
    std::map<ValueId, ChannelShuffle> shuffles;
    const std::vector<int32_t> convs = converted(p, shuffles);
    if (convs.empty()) return;
    // Ops shift as conversions insert theirs: each conv is found again by its result.
    std::vector<ValueId> results;
    for (int32_t i : convs) results.push_back(p.ops()[i].results[0]);
    std::map<ValueId, ValueId> blocked;  // plain value -> its blocked form
    for (ValueId r : results) {
      const int32_t i = p.value(r).producer;
      const std::string& type = p.ops()[i].type;
      if (auto it = shuffles.find(r); it != shuffles.end()) convert_shuffle(p, i, it->second, blocked, stats);
      else if (type == "max_pool2d") convert_pool(p, i, blocked, stats);
      else if (type == "mul") convert_scale(p, i, blocked, stats);
      else if (type == "concat") convert_concat(p, i, blocked, stats);
      else convert(p, i, blocked, stats);
    }
    PassStats swept;
    dead_code_elimination()->run(p, swept);
    stats.removed += swept.removed;
    p.compact();
  }

 private:
  int64_t block_ = 16;

  bool candidate(const Program& p, int32_t i) const {
    const Operation& op = p.ops()[i];
    if (!is_conv(op)) return false;
    const ValueType& x = p.value(op.inputs[0][0]).type;
    const ValueType& w = p.value(op.inputs[1][0]).type;
    if (x.dtype != DType::f32 || x.shape.size() != 4 || w.shape.size() != 4) return false;
    const int64_t groups = attr_int(op, "groups"), cin = w.shape[1] * groups, cout = w.shape[0];
    if (groups == 1) return true;
    if (x.shape[1] != cin) return false;
    // Depthwise (MobileNet's), or groups whose channels are whole blocks in and out (RegNet's and
    // ResNeXt's groups of 8 on AVX2). Groups of 8 on AVX-512 only where grouped_conv's kernel takes them,
    // two groups a block of 16: oneDNN runs them in blocks of 8, and a chain in blocks of 8 there lost
    // more elsewhere than it saved (RegNetY-400MF 4.3 -> 4.9 ms; on AVX2, 6.4 -> 5.3).
    if (groups == cout && w.shape[1] == 1) return true;
    if (w.shape[1] % block_ == 0 && cout % groups == 0 && (cout / groups) % block_ == 0) return true;
    return block_ == 16 && grouped8_taken(p, i);
  }

  // A grouped convolution grouped_conv's kernel takes (cpu/ref/grouped_conv.h): 8 channels a group in and
  // out, stride 1 or 2, padding within the window, no dilation or residual, a vector activation.
  static bool grouped8_taken(const Program& p, int32_t i) {
    const Operation& op = p.ops()[i];
    const Shape& w = p.value(op.inputs[1][0]).type.shape;
    const int64_t groups = attr_int(op, "groups");
    const std::vector<int64_t> stride = attr_ints(op, "stride"), padding = attr_ints(op, "padding"), dilation = attr_ints(op, "dilation");
    const std::string act = op.type == "fused_conv2d" ? attr_string(op, "activation") : "none";
    const bool vector_act = act == "none" || act == "relu" || act == "relu6" || act == "silu" || act == "hardswish";
    return kernels::grouped8_fits(w[1] * groups, w[0], groups, w[2], w[3]) && input_of(p, i, 3) == kNoValue && vector_act &&
           stride.size() == 2 && stride[0] == stride[1] && stride[0] >= 1 && stride[0] <= 2 && dilation == std::vector<int64_t>{1, 1} &&
           padding.size() == 2 && padding[0] >= 0 && padding[0] <= w[2] / 2 && padding[1] >= 0 && padding[1] <= w[2] / 2;
  }

  // A max_pool2d on f32 NCHW (the padding lanes pool zeros into zeros).
  bool pool_candidate(const Program& p, int32_t i) const {
    const Operation& op = p.ops()[i];
    if (op.type != "max_pool2d" || channels_last_op(op)) return false;
    const ValueType& x = p.value(op.inputs[0][0]).type;
    return x.dtype == DType::f32 && x.shape.size() == 4 && x.shape[1] > 0;
  }

  // A mul of an f32 map [N, C, H, W] by factors [N or 1, C, 1, 1]: the map's input slot, or -1.
  static int scale_map_slot(const Program& p, int32_t i) {
    const Operation& op = p.ops()[i];
    if (op.type != "mul") return -1;
    for (int slot : {0, 1}) {
      const ValueType& m = p.value(input_of(p, i, static_cast<size_t>(slot))).type;
      const ValueType& f = p.value(input_of(p, i, static_cast<size_t>(1 - slot))).type;
      if (m.dtype != DType::f32 || f.dtype != DType::f32 || m.shape.size() != 4 || f.shape.size() != 4) continue;
      if (f.shape[2] != 1 || f.shape[3] != 1 || (m.shape[2] == 1 && m.shape[3] == 1) || m.shape[1] <= 0) continue;
      if (f.shape[1] == m.shape[1] && (f.shape[0] == m.shape[0] || f.shape[0] == 1)) return slot;
    }
    return -1;
  }

  // A concat along the channels of f32 maps whose channels are whole blocks: on the blocks it is the
  // same concat along the block axis (SqueezeNet's fire modules, DenseNet's, Inception's).
  bool concat_candidate(const Program& p, int32_t i) const {
    const Operation& op = p.ops()[i];
    if (op.type != "concat" || op.inputs.empty() || op.inputs[0].size() < 2) return false;
    const int64_t axis = attr_int(op, "axis");
    for (ValueId v : op.inputs[0]) {
      const ValueType& t = p.value(v).type;
      if (t.dtype != DType::f32 || t.shape.size() != 4 || t.shape[1] <= 0 || t.shape[1] % block_ != 0) return false;
    }
    return axis == 1 || axis == -3;
  }

  // The candidates (convolutions; max pools, channel scales, concats and channel shuffles of candidates'
  // results) in chains of two or more convolutions, in program order; `shuffles` gets the shuffles' reads
  // by their results.
  std::vector<int32_t> converted(const Program& p, std::map<ValueId, ChannelShuffle>& shuffles) const {
    const auto& ops = p.ops();
    std::vector<bool> cand(ops.size()), conv(ops.size());
    const auto producer_of = [&](ValueId v) {
      return v == kNoValue || p.value(v).kind != ValueKind::OpResult ? -1 : p.value(v).producer;
    };
    // The inputs through which an op joins its producers' chains: a conv's x and residual, a pool's x, a
    // scale's map, a concat's every input (each must be a candidate's: the others are the op's own).
    std::vector<std::vector<ValueId>> joins(ops.size());
    std::vector<std::optional<ChannelShuffle>> shuffle_at(ops.size());  // each op's channel_shuffle_read, found once
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto k = static_cast<int32_t>(i);
      conv[i] = candidate(p, k);
      const int scale = scale_map_slot(p, k);
      // A concat of whole blocks that is shuffled (ShuffleNet's 232 + 232 channels on AVX2's 8 lanes)
      // is not converted as a concat: its shuffle's reads gather from its inputs, and it is swept.
      const bool concat = !conv[i] && concat_candidate(p, k) && !shuffle_source(p, k);
      if (!conv[i] && !concat) shuffle_at[i] = channel_shuffle_read(p, k);
      const std::optional<ChannelShuffle>& shuffle = shuffle_at[i];
      if (conv[i]) joins[i] = {input_of(p, k, 0), input_of(p, k, 3)};
      else if (concat) joins[i] = ops[i].inputs[0];
      else if (shuffle) joins[i] = ops[p.value(shuffle->concat).producer].inputs[0];
      else joins[i] = {input_of(p, k, scale >= 0 ? static_cast<size_t>(scale) : 0)};
      // Producers come first, so their cand[] are final.
      const auto blocked = [&](ValueId v) { return producer_of(v) >= 0 && cand[producer_of(v)]; };
      if (conv[i]) cand[i] = true;
      else if (concat || shuffle) cand[i] = std::all_of(joins[i].begin(), joins[i].end(), blocked);
      else cand[i] = (pool_candidate(p, k) || scale >= 0) && blocked(joins[i][0]);
    }
    Chains chains(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!cand[i]) continue;
      for (ValueId v : joins[i]) {
        // A residual joins only when the producer's output is blocked anyway (it is a candidate).
        const int32_t producer = producer_of(v);
        if (producer >= 0 && cand[producer]) chains.join(static_cast<int32_t>(i), producer);
      }
    }
    std::map<int32_t, int> size;
    for (size_t i = 0; i < ops.size(); ++i)
      if (conv[i]) ++size[chains.root(static_cast<int32_t>(i))];
    std::vector<int32_t> out;
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto k = static_cast<int32_t>(i);
      if (!cand[i] || size[chains.root(k)] < 2) continue;
      out.push_back(k);
      // A shuffle's last reshape read only by slices of it is not converted itself: the slices are.
      if (const std::optional<ChannelShuffle>& shuffle = shuffle_at[i]) {
        if (read_only_by_slices(p, k)) out.pop_back();
        else shuffles[ops[i].results[0]] = *shuffle;
      }
    }
    return out;
  }

  // v in blocks, inserting to_channel_blocks before op `at` when no blocked form exists yet. An input of
  // fewer than `plain_below` channels stays plain for blocked_conv2d's x: an image, and for groups 1 any
  // map narrower than a block, even when its producer writes blocks: oneDNN 2.6 has no jit kernel for a
  // convolution reading one partly filled block and ran its reference one (8 -> 8 channels 3x3 on a 6x5
  // map at batch 8: 570 us; read plain, its first-layer kernel takes it).
  ValueId blocked_input(Program& p, ValueId v, int64_t plain_below, std::map<ValueId, ValueId>& blocked, int32_t& at) const {
    if (p.value(v).type.shape[1] < plain_below) return v;
    if (auto it = blocked.find(v); it != blocked.end()) return it->second;
    const ValueId b = p.insert_op(at++, "to_channel_blocks", {{v}}, {{"block", block_}})[0];
    blocked[v] = b;
    return b;
  }

  void convert(Program& p, int32_t i, std::map<ValueId, ValueId>& blocked, PassStats& stats) const {
    const Operation conv = p.ops()[i];
    const ValueId residual = input_of(p, i, 3);
    std::vector<std::vector<ValueId>> inputs(4);
    inputs[0] = {blocked_input(p, conv.inputs[0][0], attr_int(conv, "groups") == 1 ? block_ : kMaxPlainChannels + 1, blocked, i)};
    inputs[1] = conv.inputs[1];
    inputs[2] = conv.inputs[2];
    if (residual != kNoValue) inputs[3] = {blocked_input(p, residual, 0, blocked, i)};
    AttrMap attrs{{"block", block_}};
    for (const char* name : {"stride", "padding", "dilation", "activation", "alpha", "groups"})
      if (auto it = conv.attrs.find(name); it != conv.attrs.end()) attrs[name] = it->second;
    replace(p, i, p.insert_op(i, "blocked_conv2d", inputs, attrs)[0], p.value(conv.inputs[1][0]).type.shape[0], blocked, stats);
  }

  // max_pool2d(x) -> max_pool2d_nhwc(blocks of x): each block of an image pooled as an NHWC image.
  void convert_pool(Program& p, int32_t i, std::map<ValueId, ValueId>& blocked, PassStats& stats) const {
    const Operation pool = p.ops()[i];
    const ValueId xb = blocked_input(p, pool.inputs[0][0], 0, blocked, i);
    AttrMap attrs;
    for (const char* name : {"kernel_size", "stride", "padding", "ceil_mode"})
      if (auto it = pool.attrs.find(name); it != pool.attrs.end()) attrs[name] = it->second;
    replace(p, i, p.insert_op(i, "max_pool2d_nhwc", {{xb}}, attrs)[0], p.value(pool.inputs[0][0]).type.shape[1], blocked, stats);
  }

  // map * factors -> scale_channel_blocks(blocks of the map, factors).
  void convert_scale(Program& p, int32_t i, std::map<ValueId, ValueId>& blocked, PassStats& stats) const {
    const auto slot = static_cast<size_t>(scale_map_slot(p, i));
    const Operation mul = p.ops()[i];
    const ValueId map = mul.inputs[slot][0], factors = mul.inputs[1 - slot][0];
    const ValueId xb = blocked_input(p, map, 0, blocked, i);
    replace(p, i, p.insert_op(i, "scale_channel_blocks", {{xb}, {factors}}, {})[0], p.value(map).type.shape[1], blocked, stats);
  }

  // concat(maps, axis 1) -> concat(their blocks, axis 1): [N, C / b, H, W, b] joined along C / b.
  void convert_concat(Program& p, int32_t i, std::map<ValueId, ValueId>& blocked, PassStats& stats) const {
    const Operation concat = p.ops()[i];
    std::vector<ValueId> parts;
    for (ValueId v : concat.inputs[0]) parts.push_back(blocked_input(p, v, 0, blocked, i));
    replace(p, i, p.insert_op(i, "concat", {parts}, {{"axis", int64_t{1}}})[0], p.value(concat.results[0]).type.shape[1], blocked,
            stats);
  }

  // A read of a channel shuffle (its last reshape, or a slice) -> gather_channel_blocks of the shuffled
  // concat's inputs' blocks.
  void convert_shuffle(Program& p, int32_t i, const ChannelShuffle& s, std::map<ValueId, ValueId>& blocked, PassStats& stats) const {
    const std::vector<ValueId> inputs = p.ops()[p.value(s.concat).producer].inputs[0];  // a copy: inserting ops moves them
    std::vector<ValueId> parts;
    std::vector<int64_t> channels;
    for (ValueId v : inputs) {
      channels.push_back(p.value(v).type.shape[1]);
      parts.push_back(blocked_input(p, v, 0, blocked, i));
    }
    const ValueId out = p.insert_op(i, "gather_channel_blocks", {parts}, {{"channels", channels}, {"index", s.index}})[0];
    replace(p, i, out, static_cast<int64_t>(s.index.size()), blocked, stats);
  }

  // The op now at i + 1 (its replacement `out`, just inserted at i, computes it in blocks) is read as
  // from_channel_blocks(out) by whoever is not converted, and removed.
  static void replace(Program& p, int32_t i, ValueId out, int64_t channels, std::map<ValueId, ValueId>& blocked, PassStats& stats) {
    const ValueId plain = p.insert_op(i + 1, "from_channel_blocks", {{out}}, {{"channels", channels}})[0];
    p.replace_uses(p.ops()[i + 2].results[0], plain);
    blocked[plain] = out;
    p.remove_ops({i + 2});
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> channel_blocking() { return std::make_unique<ChannelBlocking>(); }

}  // namespace pd::ir::passes
