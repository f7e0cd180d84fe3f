// 3x3, stride-1 convolutions -> winograd_conv2d: Winograd's F(4x4, 3x3) needs about 4x fewer
// multiplications, and the filter transform (winograd_weight) runs here, once, instead of on every call.
// conv2d and fused_conv2d (keeping its residual and activation) are both taken, and blocked_conv2d on
// channel blocks (made by channel_blocking) becomes a winograd_conv2d on blocks where its images have
// enough output tiles: at least 4 (7x7 maps and up). Every call reads the whole transformed weight (36
// Cin Cout floats) for its tiles, and on AVX-512, where oneDNN's direct kernel runs near the FMA peak,
// the point products wait on that weight where it is too large to stay in the cache for so few tiles:
// there it must be read over enough tiles of the batch (at most kMaxWeightBytesPerTile, 256 KiB, a tile;
// the batch being the hint, 1 unless pd-infer was told another), or be at most kCachedWeightBytes (4 MiB)
// in all. ResNet-18's 14x14 maps at 256 channels (9.4 MB over 16 tiles) run 785 us as Winograd against
// 550 us direct at batch 1 and its 7x7 maps at 512 channels 1250 against 790 (AMD Zen 5, 2 threads); the
// residual example's 7x7 maps at 128 channels (2.4 MB over 4 tiles) 34 against 60 us on one thread. On
// AVX2-only targets oneDNN's direct kernel runs at half the FMA peak and Winograd wins at every size
// measured there (host A, Zen 3, 7x7 x 128 channels: 0.07 against 0.23 ms at batch 1, 3.2 against
// 10.3-10.9 at batch 64), so they take no weight bound. (The Zen 5 host running its AVX2 code is no
// stand-in: there oneDNN's AVX2 kernel is fast and ResNet-18 ran 17.4 ms with the large weights on
// Winograd against 12.5 without.)
//
// Preconditions: a 3x3 kernel, stride 1, dilation 1, groups 1; the weight (and the bias, if any) is a
// param, float; at least kMinChannels input and output channels, because with fewer the transforms cost
// more than the multiplications they save (the 1-channel stem of a network stays a direct conv); and a
// target with AVX2 and FMA, without which the kernel is slower than oneDNN's direct convolution. A
// lowering pass: it runs when a model is loaded (exec::compile), so saved models keep their 3x3 weights.
// Outputs differ from conv2d's by rounding only (pd-opt --verify checks them).
#include <algorithm>

#include "passes.h"
#include "pd/pd.h"

namespace pd::ir::passes {
namespace {

constexpr int64_t kMinChannels = 16;
constexpr int64_t kMinTiles = 4;  // output tiles an image at least (blocked convolutions): 7x7 maps and up
constexpr int64_t kMaxWeightBytesPerTile = int64_t{256} << 10;
constexpr int64_t kCachedWeightBytes = int64_t{4} << 20;

struct TileRule {
  bool bound_weight = false;  // the AVX-512 bound on transformed weight bytes a tile (above)
  int64_t batch = 1;          // images a call (the batch hint)
};

// Whether the pass takes op i (see the preconditions above).
bool winograd_fits(const Program& p, int32_t i, const TileRule& rule) {
  const Operation& op = p.ops()[i];
  const bool blocked = op.type == "blocked_conv2d";
  if (attr_ints(op, "stride") != std::vector<int64_t>{1, 1} || attr_ints(op, "dilation") != std::vector<int64_t>{1, 1} ||
      attr_int(op, "groups") != 1)
    return false;
  const ValueId w = input_of(p, i, 1), b = input_of(p, i, 2);
  if (!is_param(p, w) || (b != kNoValue && !is_param(p, b))) return false;
  const ValueType& wt = p.value(w).type;
  if (wt.dtype != DType::f32 && wt.dtype != DType::f64) return false;
  const Shape& ws = wt.shape;
  if (ws.size() != 4 || ws[2] != 3 || ws[3] != 3 || ws[0] < kMinChannels || ws[1] < kMinChannels) return false;
  if (blocked) {
    const Shape& x = p.value(input_of(p, i, 0)).type.shape;
    const Shape& out = p.value(op.results[0]).type.shape;
    if (x.size() != 5 || ws[0] % x[4] != 0 || ws[1] % x[4] != 0) return false;  // whole blocks, no padding lanes
    const int64_t tiles = ((out[2] + 3) / 4) * ((out[3] + 3) / 4);
    if (tiles < kMinTiles) return false;
    const int64_t weight_bytes = 36 * ws[0] * ws[1] * 4;
    if (rule.bound_weight && weight_bytes > kCachedWeightBytes && weight_bytes > kMaxWeightBytesPerTile * tiles * rule.batch)
      return false;
  }
  return true;
}

class ConvWinograd final : public Pass {
 public:
  std::string name() const override { return "conv_winograd"; }
  bool lowering() const override { return true; }
  // The direct / Winograd kernels beat oneDNN only with their AVX2 + FMA code.
  bool supports(const Target& t) const override { return t.has_isa(CpuIsa::avx2); }
  std::string doc() const override { return "3x3 stride-1 conv2d / fused_conv2d -> winograd_conv2d (weights transformed once)"; }
  std::vector<std::string> targets() const override { return {"conv2d", "fused_conv2d", "blocked_conv2d"}; }

  void set_target(const Target& t) override { rule_.bound_weight = t.has_isa(CpuIsa::avx512); }
  void set_batch_hint(int64_t batch) override { rule_.batch = std::max<int64_t>(batch, 1); }
  bool match(const Program& p, int32_t i) const override { return winograd_fits(p, i, rule_); }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation conv = p.ops()[i];
    const ValueId w = input_of(p, i, 1);
    Tensor u;
    {
      NoGradGuard no_grad;
      u = ops::winograd_weight(p.param(w));
    }
    const ValueId uv = p.add_param(p.unique_name(p.value(w).name + ".winograd"), u);
    std::vector<std::vector<ValueId>> inputs = conv.inputs;
    inputs.resize(tensor_slots("winograd_conv2d"));  // conv2d has no residual slot
    inputs[1] = {uv};
    AttrMap attrs;
    if (auto it = conv.attrs.find("padding"); it != conv.attrs.end()) attrs["padding"] = it->second;
    for (const char* name : {"activation", "alpha", "block"})
      if (auto it = conv.attrs.find(name); it != conv.attrs.end()) attrs[name] = it->second;
    const ValueId out = p.insert_op(i, "winograd_conv2d", inputs, attrs)[0];
    p.replace_uses(conv.results[0], out);
    p.remove_ops({i + 1});
    ++stats.folded;
  }

 private:
  TileRule rule_;
};

}  // namespace

std::unique_ptr<Pass> conv_winograd() { return std::make_unique<ConvWinograd>(); }

}  // namespace pd::ir::passes
