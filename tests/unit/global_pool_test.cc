// global_pool_fuse: a global average pool (or a mean over H and W) reads the channel blocks or the NHWC
// map it was converted from, with the same numbers as the pool after the conversion, and leaves
// everything else alone.
#include <catch2/catch.hpp>

#include "pd/core/cpu_features.h"
#include "pd/exec/executor.h"
#include "pd/ir/pass.h"
#include "pd/pd.h"
#include "test_util.h"

using pd::DType;
using pd::ir::Program;
using pd::ir::ValueId;
using pd::test::count_ops;

namespace {

const std::vector<int64_t> kOne = {1, 1};

pd::Tensor rnd(const pd::Shape& s, int64_t seed) { return pd::ops::uniform(s, -1, 1, seed); }

Program run_passes(const Program& p, std::vector<std::string> passes, const std::string& target = "host") {
  Program q = p;
  pd::ir::PassOptions opt;
  opt.passes = std::move(passes);
  opt.target = pd::Target::parse(target);
  pd::ir::PassManager(opt).run(q);
  return q;
}

// Both programs on one random batch of 3 (the input's -1): every output within `tol` relative.
void check_same_outputs(const Program& before, const Program& after, double tol = 1e-5) {
  pd::Shape s = before.value(before.inputs()[0]).type.shape;
  s[0] = 3;
  const std::map<std::string, pd::Tensor> in = {{before.value(before.inputs()[0]).name, rnd(s, 7)}};
  const auto a = pd::exec::Executor(before).run(in), b = pd::exec::Executor(after).run(in);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].shape() == b[i].shape());
    const auto x = a[i].to_vector<double>(), y = b[i].to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) REQUIRE(std::abs(x[k] - y[k]) <= tol * (1 + std::abs(x[k])));
  }
}

// x [-1, 5, 6, 12] (NHWC) -> transpose `perm` -> adaptive_avg_pool2d `size` -> flatten -> output, and
// with `side`, the transposed map as a second output.
Program nhwc_pool(std::vector<int64_t> perm, std::vector<int64_t> size, bool side) {
  Program p;
  const ValueId x = p.add_input("x", {DType::f32, {-1, 5, 6, 12}});
  const ValueId t = p.add_op("transpose", {{x}}, {{"perm", perm}})[0];
  const ValueId pool = p.add_op("adaptive_avg_pool2d", {{t}}, {{"output_size", size}})[0];
  p.mark_output(p.add_op("flatten", {{pool}}, {{"start_axis", int64_t{1}}})[0], "out");
  if (side) p.mark_output(p.add_op("sigmoid", {{t}})[0], "side");
  return p;
}

// x [-1, 5, 6, 12] (NHWC) -> transpose to NCHW -> mean over `axes` -> output (ShuffleNetV2's pool, as
// ONNX's ReduceMean exports it).
Program nhwc_mean(std::vector<int64_t> axes, bool keepdim) {
  Program p;
  const ValueId x = p.add_input("x", {DType::f32, {-1, 5, 6, 12}});
  const ValueId t = p.add_op("transpose", {{x}}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}})[0];
  p.mark_output(p.add_op("mean", {{t}}, {{"axis", axes}, {"keepdim", keepdim}})[0], "out");
  return p;
}

// x [-1, 16, 9, 9] -> two 3x3 convs (16 -> 48 -> 48 channels, relu) -> global average pool -> linear:
// channel_blocking runs the convs on blocks of 8 or 16, so the pool reads 48 channels in 6 or 3 blocks.
Program conv_pool() {
  Program p;
  ValueId y = p.add_input("x", {DType::f32, {-1, 16, 9, 9}});
  int64_t in = 16, seed = 1;
  for (int64_t out : {48, 48}) {
    const ValueId w = p.add_param(p.unique_name("w"), rnd({out, in, 3, 3}, seed++)), b = p.add_param(p.unique_name("b"), rnd({out}, seed++));
    y = p.add_op("relu", {{p.add_op("conv2d", {{y}, {w}, {b}}, {{"padding", kOne}})[0]}})[0];
    in = out;
  }
  y = p.add_op("flatten", {{p.add_op("adaptive_avg_pool2d", {{y}}, {{"output_size", kOne}})[0]}}, {{"start_axis", int64_t{1}}})[0];
  p.mark_output(p.add_op("linear", {{y}, {p.add_param("fc.w", rnd({5, 48}, 9))}, {p.add_param("fc.b", rnd({5}, 10))}})[0], "out");
  return p;
}

}  // namespace

TEST_CASE("pass: a global average pool of an NHWC map reads it without the transpose", "[pass]") {
  const Program p = nhwc_pool({0, 3, 1, 2}, kOne, false);
  const Program q = run_passes(p, {"global_pool_fuse", "dce"});
  CHECK(count_ops(q, "global_avg_pool_nhwc") == 1);
  CHECK(count_ops(q, "transpose") == 0);
  CHECK(count_ops(q, "adaptive_avg_pool2d") == 0);
  CHECK(q.value(q.outputs()[0]).type.shape == pd::Shape{-1, 12});
  check_same_outputs(p, q);
  SECTION("a transpose another op reads stays for it") {
    const Program r = nhwc_pool({0, 3, 1, 2}, kOne, true);
    const Program s = run_passes(r, {"global_pool_fuse", "dce"});
    CHECK(count_ops(s, "global_avg_pool_nhwc") == 1);
    CHECK(count_ops(s, "transpose") == 1);
    check_same_outputs(r, s);
  }
  SECTION("other pools and other transposes are left alone") {
    for (const Program& r : {nhwc_pool({0, 3, 1, 2}, {2, 3}, false), nhwc_pool({0, 3, 2, 1}, kOne, false)})
      CHECK(pd::ir::print(run_passes(r, {"global_pool_fuse"})) == pd::ir::print(r));
  }
}

TEST_CASE("pass: a mean over H and W of an NHWC map reads it without the transpose", "[pass]") {
  for (const bool keepdim : {false, true})
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{2, 3}, std::vector<int64_t>{-1, -2}}) {
      CAPTURE(keepdim, axes);
      const Program p = nhwc_mean(axes, keepdim);
      const Program q = run_passes(p, {"global_pool_fuse", "dce"});
      CHECK(count_ops(q, "global_avg_pool_nhwc") == 1);
      CHECK(count_ops(q, "transpose") == 0);
      CHECK(count_ops(q, "mean") == 0);
      CHECK(q.value(q.outputs()[0]).type.shape == (keepdim ? pd::Shape{-1, 12, 1, 1} : pd::Shape{-1, 12}));
      check_same_outputs(p, q);
    }
  SECTION("means over other axes are left alone") {
    for (const Program& r : {nhwc_mean({1, 2}, false), nhwc_mean({2}, false), nhwc_mean({1, 2, 3}, false)})
      CHECK(pd::ir::print(run_passes(r, {"global_pool_fuse"})) == pd::ir::print(r));
  }
}

TEST_CASE("pass: a global average pool after blocked convolutions reads the blocks", "[pass]") {
  if (!(pd::cpu_has_avx2_fma() && pd::cpu_backend_built(pd::Backend::onednn))) {
    WARN("channel_blocking needs oneDNN and AVX2: skipped");
    return;
  }
  const Program p = conv_pool();
  const std::vector<std::string> blocking = {"conv_act_fuse", "channel_blocking"};
  for (const std::string target : {"cpu-avx2", pd::cpu_has_avx512() ? "cpu-avx512" : "cpu-avx2"}) {
    CAPTURE(target);
    const Program blocked = run_passes(p, blocking, target);
    REQUIRE(count_ops(blocked, "from_channel_blocks") == 1);
    std::vector<std::string> passes = blocking;
    passes.insert(passes.end(), {"global_pool_fuse", "dce"});
    const Program q = run_passes(p, passes, target);
    CHECK(count_ops(q, "global_avg_pool_nhwc") == 1);
    CHECK(count_ops(q, "from_channel_blocks") == 0);
    CHECK(count_ops(q, "adaptive_avg_pool2d") == 0);
    check_same_outputs(p, q);
  }
  // pd-infer's lowering at load includes it.
  pd::ir::PassOptions opt;
  opt.level = 2;
  opt.lower = true;
  Program lowered = p;
  pd::ir::PassManager(opt).run(lowered);
  CHECK(count_ops(lowered, "global_avg_pool_nhwc") == 1);
  check_same_outputs(p, lowered, 1e-4);  // the 3x3 convolutions may run as Winograd's, which rounds differently
}
