// conv_tap_trim: a conv2d whose dilated kernel has taps that read only padding, for every output, is the
// same convolution with those taps cut from its weight and the padding cut alike. DeepLabV3's ASPP runs
// 3x3 convolutions with dilations 12-36 on 14x14 maps (torchvision's, at 224x224): at dilation 24 and
// 36 only the centre tap ever reads the map, so each is a 1x1 convolution. oneDNN 2.6 has no jit kernel
// for padding that wide and ran its reference one, 1.2-1.5 s each; onnxruntime multiplies the zeros.
// Taken where the input's spatial extents are known and the trimmed padding stays symmetric.
#include <optional>

#include "op_api.h"
#include "passes.h"

namespace pd::ir::passes {
namespace {

// The taps [first, last] of one axis that read the input for some output, for extent `in`, kernel k,
// stride s, padding p, dilation d and output extent `out`; first > last when none does.
std::pair<int64_t, int64_t> live_taps(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t out) {
  const auto live = [&](int64_t j) {
    const int64_t lo = -p + j * d, hi = (out - 1) * s - p + j * d;  // the rows tap j reads
    return hi >= 0 && lo < in;
  };
  int64_t first = 0, last = k - 1;
  while (first < k && !live(first)) ++first;
  while (last >= first && !live(last)) --last;
  return {first, last};
}

class ConvTapTrim final : public Pass {
 public:
  std::string name() const override { return "conv_tap_trim"; }
  std::string doc() const override {
    return "conv2d taps that read only padding (wide dilations on small maps: DeepLabV3's ASPP) cut from the weight and padding";
  }
  std::vector<std::string> targets() const override { return {"conv2d"}; }

  bool match(const Program& p, int32_t i) const override { return trimmed(p, i).has_value(); }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Trim t = *trimmed(p, i);
    const Operation conv = p.ops()[i];
    const ValueId w = input_of(p, i, 1);
    const Tensor& weight = p.param(w);
    const Tensor cut = ops::slice(weight, {2, 3}, {t.first[0], t.first[1]}, {t.last[0] + 1, t.last[1] + 1}).contiguous();
    std::vector<std::vector<ValueId>> inputs = conv.inputs;
    inputs[1] = {p.add_param(p.unique_name(p.value(w).name + ".trimmed"), cut)};
    AttrMap attrs = conv.attrs;
    attrs["padding"] = t.padding;
    const ValueId out = p.insert_op(i, "conv2d", inputs, attrs)[0];
    p.replace_uses(conv.results[0], out);
    p.remove_ops({i + 1});
    ++stats.fused;
  }

 private:
  struct Trim {
    int64_t first[2], last[2];
    std::vector<int64_t> padding;
  };

  static std::optional<Trim> trimmed(const Program& p, int32_t i) {
    const Operation& op = p.ops()[i];
    const ValueId w = input_of(p, i, 1);
    if (!is_param(p, w)) return std::nullopt;
    const Shape& xs = p.value(input_of(p, i, 0)).type.shape;
    const Shape& ws = p.value(w).type.shape;
    const Shape& os = p.value(op.results[0]).type.shape;
    if (xs.size() != 4 || ws.size() != 4 || os.size() != 4) return std::nullopt;
    const std::vector<int64_t> stride = attr_ints(op, "stride"), padding = attr_ints(op, "padding"), dilation = attr_ints(op, "dilation");
    Trim t{};
    bool cut = false;
    for (int d = 0; d < 2; ++d) {
      if (xs[2 + d] <= 0 || os[2 + d] <= 0) return std::nullopt;  // unknown or empty extents
      const auto [first, last] = live_taps(xs[2 + d], ws[2 + d], stride[d], padding[d], dilation[d], os[2 + d]);
      if (first > last) return std::nullopt;  // every tap reads padding: left to the kernels (all bias)
      // The padding before the first live tap and after the last; the cut must keep them equal.
      const int64_t before = padding[d] - first * dilation[d], after = padding[d] - (ws[2 + d] - 1 - last) * dilation[d];
      if (before != after || before < 0) return std::nullopt;
      t.first[d] = first;
      t.last[d] = last;
      t.padding.push_back(before);
      cut = cut || first > 0 || last < ws[2 + d] - 1;
    }
    if (!cut) return std::nullopt;
    return t;
  }
};

}  // namespace

std::unique_ptr<Pass> conv_tap_trim() { return std::make_unique<ConvTapTrim>(); }

}  // namespace pd::ir::passes
