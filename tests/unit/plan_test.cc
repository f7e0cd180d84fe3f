// Targets and exec::compile: a portable program is lowered for the target on a copy and computes the
// same; what a target supports decides which lowering passes fire; a program lowered for a wider
// target is refused with a message naming both; the target survives model files and the text form; a
// portable program is optimised (-O2) before it is lowered, without waking OpenMP's team.
#include <catch2/catch.hpp>

#include <filesystem>
#include <unistd.h>

#include "pd/core/thread_pool.h"
#include "pd/exec/executor.h"
#include "pd/exec/plan.h"
#include "pd/io/model_file.h"
#include "pd/pd.h"
#include "test_util.h"

using pd::DType;
using pd::Tensor;
using pd::ir::Program;
using pd::test::error_of;
using pd::test::max_abs_diff;

namespace {

using pd::test::count_ops;

// x -> conv 3x3 (16 -> 16) -> add x -> relu -> max_pool2d: residual, activation, Winograd and pooling
// all have something to do.
Program block() {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 16, 8, 8}});
  auto w = p.add_param("w", pd::ops::uniform({16, 16, 3, 3}, -0.2, 0.2, 1));
  auto y = p.add_op("conv2d", {{x}, {w}, {}}, {{"padding", std::vector<int64_t>{1, 1}}})[0];
  y = p.add_op("relu", {{p.add_op("add", {{y}, {x}})[0]}})[0];
  p.mark_output(p.add_op("max_pool2d", {{y}}, {{"kernel_size", std::vector<int64_t>{2, 2}}})[0], "out");
  return p;
}

}  // namespace

TEST_CASE("target: names, parsing and what runs where", "[plan]") {
  const pd::Target avx2 = pd::Target::parse("cpu-avx2"), avx512 = pd::Target::parse("cpu-avx512");
  CHECK(avx2.str() == "cpu-avx2");
  CHECK(pd::Target::parse("cpu").str() == "cpu-baseline");
  CHECK(pd::Target::parse("host").str() == pd::Target::host().str());
  CHECK(avx512.can_run(avx2));
  CHECK_FALSE(avx2.can_run(avx512));
  CHECK(pd::Target::parse("cpu").can_run(pd::Target::parse("cpu-baseline")));
  CHECK_FALSE(pd::Target::host().backends.empty());
  CHECK(pd::Target::host().backends.back() == pd::Backend::reference);  // always built, always last
  CHECK_THAT(error_of([] { pd::Target::parse("gpu"); }), Catch::Contains("unknown target 'gpu'") && Catch::Contains("cpu-avx2"));
}

TEST_CASE("compile: lowering happens on a copy, per target, and computes the same", "[plan]") {
  const Program p = block();
  const Tensor x = pd::ops::uniform({2, 16, 8, 8}, -1, 1, 7);
  const Tensor want = pd::exec::Executor(p).run({{"x", x}})[0];

  pd::exec::ExecPlan avx2 = pd::exec::compile(p, pd::Target::parse("cpu-avx2"));
  CHECK(p.ops().size() == 4);  // the caller's program is untouched
  CHECK(p.target().empty());
  CHECK(avx2.source_ops() == 4);
  CHECK(avx2.program().target() == "cpu-avx2");
  CHECK(count_ops(avx2.program(), "winograd_conv2d") == 1);  // conv + residual + relu in one op
  CHECK(count_ops(avx2.program(), "max_pool2d") == 1);       // Winograd took the conv, so no conv + pool
  CHECK_FALSE(avx2.lowering_report().empty());
  CHECK(max_abs_diff(pd::exec::Executor(avx2).run({{"x", x}})[0], want) < 1e-4f);

  // The baseline has no AVX2 kernels: the fusions fire, Winograd does not.
  pd::exec::ExecPlan base = pd::exec::compile(p, pd::Target::parse("cpu"));
  CHECK(count_ops(base.program(), "winograd_conv2d") == 0);
  CHECK(count_ops(base.program(), "fused_conv2d") == 1);
  CHECK(base.program().target() == "cpu-baseline");
  CHECK(max_abs_diff(pd::exec::Executor(base).run({{"x", x}})[0], want) < 1e-4f);

  // No lowering: the program as it is; a disabled pass stays out; an unknown one is an error.
  pd::exec::ExecPlan plain = pd::exec::compile(p, pd::Target::host(), {.lower = false});
  CHECK(pd::ir::print(plain.program()) == pd::ir::print(p));
  pd::exec::ExecPlan no_res = pd::exec::compile(p, pd::Target::parse("cpu"), {.disable = {"conv_residual_fuse"}});
  CHECK(count_ops(no_res.program(), "add") + count_ops(no_res.program(), "fused_elementwise") == 1);
  CHECK_THAT(error_of([&] { pd::exec::compile(p, pd::Target::host(), {.disable = {"fuse_all"}}); }),
             Catch::Contains("unknown pass 'fuse_all'"));
}

TEST_CASE("compile: a lowered program runs where its target fits and is refused elsewhere", "[plan]") {
  pd::exec::ExecPlan lowered = pd::exec::compile(block(), pd::Target::parse("cpu-avx512"));
  const Program& q = lowered.program();
  // Taken as it is by a wider-or-equal target: nothing is lowered again.
  pd::exec::ExecPlan again = pd::exec::compile(q, pd::Target::parse("cpu-avx512"));
  CHECK(again.lowering_report().empty());
  CHECK(pd::ir::print(again.program()) == pd::ir::print(q));
  const std::string msg = error_of([&] { pd::exec::compile(q, pd::Target::parse("cpu-avx2")); });
  CHECK_THAT(msg, Catch::Contains("lowered by pd-opt for cpu-avx512") && Catch::Contains("this machine (cpu-avx2)") &&
                      Catch::Contains("portable model"));

  // The mark survives the text form and model files.
  CHECK(pd::ir::print(q).rfind("program for cpu-avx512 {", 0) == 0);
  CHECK(pd::ir::parse(pd::ir::print(q), q.params()).target() == "cpu-avx512");
  const auto dir = std::filesystem::temp_directory_path() / ("pd_plan_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  pd::io::save_program((dir / "m.pdmodel").string(), q);
  CHECK(pd::io::load_program((dir / "m.pdmodel").string()).target() == "cpu-avx512");
  pd::io::save_program((dir / "p.pdmodel").string(), block());
  CHECK(pd::io::load_program((dir / "p.pdmodel").string()).target().empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("compile: an executor on a plan packs weights into the plan", "[plan]") {
  pd::exec::ExecPlan plan = pd::exec::compile(block(), pd::Target::host());
  const Tensor x = pd::ops::uniform({1, 16, 8, 8}, -1, 1, 3);
  {
    pd::exec::Executor exec(plan);
    exec.run({{"x", x}});
    CHECK(&exec.packed_weights() == &plan.packed_weights());
  }
  pd::exec::Executor second(plan);  // a later executor on the same plan finds what the first packed
  CHECK(second.packed_weights().size() == plan.packed_weights().size());
}

TEST_CASE("compile: the target's backends decide the kernels an executor runs", "[plan]") {
  const Program p = block();
  const Tensor x = pd::ops::uniform({2, 16, 8, 8}, -1, 1, 5);
  pd::Target reference = pd::Target::host();
  reference.backends = {pd::Backend::reference};
  pd::exec::ExecPlan plan = pd::exec::compile(p, reference, {.lower = false});
  const pd::Backend* before = pd::forced_backend();
  const Tensor got = pd::exec::Executor(plan).run({{"x", x}})[0];
  CHECK(pd::forced_backend() == before);  // the scope ends with the run
  Tensor want;
  {
    pd::ScopedKernelBackend ref(pd::Backend::reference);
    want = pd::exec::Executor(p).run({{"x", x}})[0];
  }
  CHECK(got.to_vector<float>() == want.to_vector<float>());  // bit for bit: the same kernels ran
}

TEST_CASE("compile: every op's kernel is bound once, and a missing one is an error at load", "[plan]") {
  Program p = block();
  auto flat = p.add_op("flatten", {{p.outputs()[0]}}, {{"start_axis", int64_t{1}}})[0];  // a view: no kernel
  p.mark_output(flat, "flat");
  pd::exec::ExecPlan plan = pd::exec::compile(p, pd::Target::host(), {.lower = false});
  REQUIRE(plan.kernels().size() == plan.program().ops().size());
  for (size_t k = 0; k < plan.kernels().size(); ++k)
    CHECK((plan.kernels()[k] == nullptr) == pd::op_schema(plan.program().ops()[k].type).is_view);
  // Bound kernels run whatever the caller's thread forces later: the plan chose them.
  const Tensor x = pd::ops::uniform({2, 16, 8, 8}, -1, 1, 9);
  const Tensor free = pd::exec::Executor(plan).run({{"x", x}})[0];
  Tensor forced;
  {
    pd::ScopedKernelBackend ref(pd::Backend::reference);
    forced = pd::exec::Executor(plan).run({{"x", x}})[0];
  }
  CHECK(free.to_vector<float>() == forced.to_vector<float>());
  // exp has no integer kernel: the plan says so when it is made, naming the op.
  Program ints;
  auto i = ints.add_input("i", {DType::i64, {3}});
  ints.mark_output(ints.add_op("exp", {{i}})[0], "e");
  CHECK_THAT(error_of([&] { pd::exec::compile(ints, pd::Target::host()); }),
             Catch::Contains("op #0 'exp'") && Catch::Contains("no kernel for dtype i64"));
}

TEST_CASE("compile: a portable model is optimised at -O2 first, on one thread", "[plan]") {
  // conv 3x3 (128 -> 128) -> eval batch_norm: -O2 folds the norm into the weights (147 K of them).
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 128, 6, 6}});
  auto w = p.add_param("w", pd::ops::uniform({128, 128, 3, 3}, -0.1, 0.1, 1));
  auto y = p.add_op("conv2d", {{x}, {w}, {}}, {{"padding", std::vector<int64_t>{1, 1}}})[0];
  const auto stat = [&](const char* name, double lo, double hi, uint64_t seed) {
    return p.add_param(name, pd::ops::uniform({128}, lo, hi, seed));
  };
  y = p.add_op("batch_norm", {{y}, {stat("s", 0.5, 2, 2)}, {stat("b", -1, 1, 3)}, {stat("m", -1, 1, 4)}, {stat("v", 0.5, 2, 5)}},
               {{"training", false}, {"epsilon", 1e-5}})[0];
  p.mark_output(y, "y");
  const Tensor in = pd::ops::uniform({2, 128, 6, 6}, -1, 1, 6);
  const Tensor want = pd::exec::Executor(p).run({{"x", in}})[0];

  const int64_t team_uses = pd::openmp_team_uses();
  pd::exec::ExecPlan plan = pd::exec::compile(p, pd::Target::host());
  // Folding did not wake OpenMP's team: awake, the first runs would start their primitives on it.
  CHECK(pd::openmp_team_uses() == team_uses);
  CHECK(count_ops(plan.program(), "batch_norm") == 0);
  CHECK(max_abs_diff(pd::exec::Executor(plan).run({{"x", in}})[0], want) < 1e-3f);
  CHECK(count_ops(pd::exec::compile(p, pd::Target::host(), {.level = 0}).program(), "batch_norm") == 1);
}
