// adaptive_avg_pool2d to [1, 1] (a global average pool), or a mean over axes 2 and 3 (ONNX's ReduceMean
// as ShuffleNetV2 exports its pool), whose input was just converted to NCHW for it -> global_avg_pool_nhwc
// on the layout before the conversion (then flattened to [N, C] for a mean without keepdim):
//   - from_channel_blocks(v): the channel-blocked convolutions' output (channel_blocking, conv_winograd);
//   - transpose(v, [0, 3, 1, 2]): the NHWC int8 region's f32 output (int8_channels_last).
// The pool then reads the map once where it was, instead of a reorder writing all of it in NCHW and
// the pool reading that back (the residual example at batch 1: 20 of its 490 us int8, 23 of 690 f32 on
// host A). The conversion stays for any other reader; dce removes it otherwise. A lowering pass: the
// conversions exist only in lowered programs, after the passes that make them.
#include <algorithm>

#include "passes.h"

namespace pd::ir::passes {
namespace {

const std::vector<int64_t> kNhwcToNchw = {0, 3, 1, 2};

class GlobalPoolFusion final : public Pass {
 public:
  std::string name() const override { return "global_pool_fuse"; }
  bool lowering() const override { return true; }
  std::string doc() const override {
    return "adaptive_avg_pool2d [1, 1] or mean over H and W of from_channel_blocks / an NHWC -> NCHW transpose -> global_avg_pool_nhwc on the layout before it";
  }
  std::vector<std::string> targets() const override { return {"adaptive_avg_pool2d", "mean"}; }

  bool match(const Program& p, int32_t i) const override {
    const Operation& pool = p.ops()[i];
    if (pool.type == "mean" ? !spatial_mean(p, pool) : attr_ints(pool, "output_size") != std::vector<int64_t>{1, 1}) return false;
    const Value& x = p.value(pool.inputs[0][0]);
    if (x.kind != ValueKind::OpResult || x.producer < 0 || x.type.dtype != DType::f32) return false;
    const Operation& convert = p.ops()[x.producer];
    if (convert.type == "from_channel_blocks") return true;
    return convert.type == "transpose" && attr_ints(convert, "perm") == kNhwcToNchw && x.type.shape.size() == 4 && x.type.shape[1] >= 0;
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation pool = p.ops()[i];
    const Value& x = p.value(pool.inputs[0][0]);
    const Operation& convert = p.ops()[x.producer];
    const int64_t channels = convert.type == "from_channel_blocks" ? attr_int(convert, "channels") : x.type.shape[1];
    const ValueId source = convert.inputs[0][0];
    ValueId mean = p.insert_op(i, "global_avg_pool_nhwc", {{source}}, {{"channels", channels}})[0];
    if (pool.type == "mean" && !attr_bool(pool, "keepdim"))
      mean = p.insert_op(++i, "flatten", {{mean}}, {{"start_axis", int64_t{1}}, {"stop_axis", int64_t{-1}}})[0];
    p.replace_uses(pool.results[0], mean);
    p.remove_ops({i + 1});
    ++stats.fused;
  }

 private:
  // A mean of a 4-D value over exactly its axes 2 and 3 (either may be counted from the end).
  static bool spatial_mean(const Program& p, const Operation& mean) {
    if (p.value(mean.inputs[0][0]).type.shape.size() != 4) return false;
    std::vector<int64_t> axes = attr_ints(mean, "axis");
    for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
    std::sort(axes.begin(), axes.end());
    return axes == std::vector<int64_t>{2, 3};
  }
};

}  // namespace

std::unique_ptr<Pass> global_pool_fusion() { return std::make_unique<GlobalPoolFusion>(); }

}  // namespace pd::ir::passes
