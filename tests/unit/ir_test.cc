// The Program IR: building, the verifier's refusals, and the text form's exact round trip.
#include <catch2/catch.hpp>

#include "pd/ir/program.h"
#include "pd/pd.h"

using pd::DType;
using pd::ir::Program;
using pd::ir::ValueType;

namespace {

pd::Tensor rnd(const pd::Shape& s, int64_t seed) { return pd::ops::uniform(s, -1, 1, seed); }

// A LeNet-like head: flatten, linear with and without bias, relu, dropout.
Program mlp() {
  Program p;
  auto x = p.add_input("image", {DType::f32, {-1, 1, 4, 4}});
  auto w1 = p.add_param("fc1.weight", rnd({8, 16}, 1));
  auto b1 = p.add_param("fc1.bias", rnd({8}, 2));
  auto w2 = p.add_param("fc2.weight", rnd({3, 8}, 3));
  auto f = p.add_op("flatten", {{x}}, {{"start_axis", int64_t{1}}})[0];
  auto h = p.add_op("linear", {{f}, {w1}, {b1}})[0];
  auto r = p.add_op("relu", {{h}})[0];
  auto d = p.add_op("dropout", {{r}}, {{"p", 0.25}, {"training", false}})[0];
  auto y = p.add_op("linear", {{d}, {w2}, {}})[0];
  p.mark_output(y, "logits");
  return p;
}

// Every attribute type, a list input (concat) and a multi-result op (split).
Program every_attr() {
  Program p;
  auto a = p.add_input("a", {DType::f32, {-1, 3}});
  auto b = p.add_input("b weird name", {DType::f32, {-1, 3}});
  auto c = p.add_op("concat", {{a, b, a}}, {{"axis", int64_t{0}}})[0];
  auto parts = p.add_op("split", {{c}}, {{"sections", std::vector<int64_t>{1, 2}}, {"axis", int64_t{1}}});
  auto k = p.add_op("cast", {{parts[1]}}, {{"dtype", DType::f64}})[0];
  auto cl = p.add_op("clip", {{k}}, {{"min", -0.5}, {"max", 1e-7}})[0];
  auto keep = p.add_op("sum", {{cl}}, {{"axis", std::vector<int64_t>{1}}, {"keepdim", true}})[0];
  auto ce = p.add_op("leaky_relu", {{parts[0]}}, {{"alpha", 0.1}})[0];
  auto lbl = p.add_op("argmax", {{ce}}, {{"axis", int64_t{1}}})[0];
  auto loss = p.add_op("cross_entropy", {{ce}, {lbl}}, {{"reduction", std::string("none")}})[0];
  p.mark_output(keep, "kept");
  p.mark_output(loss, "loss \"quoted\"");
  return p;
}

Program conv_bn() {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 2, 6, 6}});
  auto w = p.add_param("conv.weight", rnd({4, 2, 3, 3}, 4));
  auto bn = [&](const char* n, int64_t seed) { return p.add_param(n, pd::ops::uniform({4}, 0.5, 1.5, seed)); };
  auto s = bn("bn.scale", 5), b = bn("bn.bias", 6), m = bn("bn.mean", 7), v = bn("bn.var", 8);
  auto y = p.add_op("conv2d", {{x}, {w}, {}}, {{"padding", std::vector<int64_t>{1, 1}}})[0];
  auto z = p.add_op("batch_norm", {{y}, {s}, {b}, {m}, {v}}, {{"training", false}, {"epsilon", 1e-5}})[0];
  p.mark_output(z, "out");
  return p;
}

void check_round_trip(const Program& p) {
  pd::ir::verify(p);
  const std::string text = pd::ir::print(p);
  Program q = pd::ir::parse(text, p.params());
  pd::ir::verify(q);
  CHECK(pd::ir::print(q) == text);
  REQUIRE(q.values().size() == p.values().size());
  for (size_t i = 0; i < p.values().size(); ++i) {
    CHECK(q.values()[i].name == p.values()[i].name);
    CHECK(q.values()[i].type == p.values()[i].type);
    CHECK(q.values()[i].kind == p.values()[i].kind);
  }
  REQUIRE(q.ops().size() == p.ops().size());
  for (size_t i = 0; i < p.ops().size(); ++i) {
    CHECK(q.ops()[i].type == p.ops()[i].type);
    CHECK(q.ops()[i].inputs == p.ops()[i].inputs);
    CHECK(q.ops()[i].results == p.ops()[i].results);
    CHECK(q.ops()[i].attrs == p.ops()[i].attrs);
  }
  CHECK(q.outputs() == p.outputs());
  CHECK(q.output_names() == p.output_names());
}

void require_verify_error(const Program& p, const std::string& needle) {
  try {
    pd::ir::verify(p);
    FAIL("verify accepted a bad program; expected: " << needle);
  } catch (const pd::Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("ir: add_op infers result types with unknown extents", "[ir]") {
  Program p = mlp();
  const auto& ops = p.ops();
  REQUIRE(ops.size() == 5);
  CHECK(p.value(ops[0].results[0]).type.str() == "f32[-1, 16]");
  CHECK(p.value(ops[4].results[0]).type == ValueType{DType::f32, {-1, 3}});
  CHECK(p.value(ops[3].results[1]).type.str() == "f32[-1, 8]");  // dropout's mask
  CHECK(p.users(ops[1].results[0]) == std::vector<int32_t>{2});
  CHECK(p.is_output(ops[4].results[0]));
  CHECK_THROWS_WITH(p.add_op("linear", {{ops[0].results[0]}, {p.find("fc2.weight")}, {}}),
                    Catch::Contains("in_features"));
  CHECK_THROWS_WITH(p.add_op("no_such_op", {}), Catch::Contains("unknown op"));
  CHECK_THROWS_WITH(p.add_input("image", {DType::f32, {1}}), Catch::Contains("taken"));
}

TEST_CASE("ir: text form round-trips exactly", "[ir]") {
  check_round_trip(mlp());
  check_round_trip(every_attr());
  check_round_trip(conv_bn());
  // A parsed program keeps the text's names, however they look.
  Program p = pd::ir::parse(pd::ir::print(every_attr()));
  CHECK(p.find("b weird name") != pd::ir::kNoValue);
  CHECK(pd::ir::print(p).find("%\"b weird name\"") != std::string::npos);
  CHECK(pd::ir::print(p).find("{max: 1e-07, min: -0.5}") != std::string::npos);
}

TEST_CASE("ir: text form shows the documented layout", "[ir]") {
  const std::string text = pd::ir::print(mlp());
  CHECK(text.find("input %image: f32[-1, 1, 4, 4]") != std::string::npos);
  CHECK(text.find("param %fc1.weight: f32[8, 16]") != std::string::npos);
  CHECK(text.find("%1: f32[-1, 8] = linear(%0, %fc1.weight, %fc1.bias)") != std::string::npos);
  CHECK(text.find("= linear(%3, %fc2.weight, none)") != std::string::npos);
  CHECK(text.find("{p: 0.25, training: false}") != std::string::npos);
  CHECK(text.find("output %5 as \"logits\"") != std::string::npos);
}

TEST_CASE("ir: parse errors name the line", "[ir]") {
  CHECK_THROWS_WITH(pd::ir::parse("program {\n  input %x: f32[2]\n  %1: f32[2] = relu(%y)\n}"),
                    Catch::Contains("line 3") && Catch::Contains("%y is not defined"));
  CHECK_THROWS_WITH(pd::ir::parse("program {\n  input %x: q32[2]\n}"), Catch::Contains("line 2"));
  CHECK_THROWS_WITH(pd::ir::parse("program {\n input %x: f32[2]\n %1: f32[2] = relu(%x) {alpah: 1.0}\n}"),
                    Catch::Contains("relu has no attribute 'alpah'"));
  CHECK_THROWS_WITH(pd::ir::parse("program {\n input %x: f32[2]\n %x: f32[2] = relu(%x)\n}"),
                    Catch::Contains("defined twice"));
  CHECK_THROWS_WITH(pd::ir::parse("program {\n input %x: f32[2]\n"), Catch::Contains("line 3"));
  CHECK_THROWS_AS(pd::ir::parse("nonsense"), pd::Error);
}

TEST_CASE("ir: verify refuses broken programs", "[ir]") {
  SECTION("types that disagree with the shape rules") {
    Program p = pd::ir::parse("program {\n input %x: f32[-1, 3]\n %1: f32[-1, 4] = relu(%x)\n output %1 as \"y\"\n}");
    require_verify_error(p, "declared f32[-1, 4], but the op gives f32[-1, 3]");
    Program q = pd::ir::parse("program {\n input %x: f32[-1, 3]\n %1: f64[-1, 3] = relu(%x)\n output %1 as \"y\"\n}");
    require_verify_error(q, "relu");
  }
  SECTION("inputs that do not fit the op") {
    Program p = pd::ir::parse("program {\n input %x: f32[2, 3]\n input %w: f32[4, 5]\n"
                              " %1: f32[2, 4] = linear(%x, %w, none)\n output %1 as \"y\"\n}");
    require_verify_error(p, "in_features");
  }
  SECTION("use before definition (a cycle)") {
    Program p = mlp();
    auto& ops = const_cast<std::vector<pd::ir::Operation>&>(p.ops());
    ops[1].inputs[0] = {ops[2].results[0]};  // linear reads relu's output, which reads the linear
    require_verify_error(p, "before it is defined");
  }
  SECTION("dangling values after removing a producer") {
    Program p = mlp();
    p.remove_ops({2});  // relu's result is still read by dropout
    require_verify_error(p, "dangling");
  }
  SECTION("params without tensors, unknown and missing attributes") {
    Program p = pd::ir::parse(pd::ir::print(mlp()));  // no tensors given
    require_verify_error(p, "has no tensor");
    Program q = mlp();
    const_cast<pd::AttrMap&>(q.ops()[2].attrs)["alpha"] = 1.0;
    require_verify_error(q, "unknown attribute 'alpha'");
    Program r = pd::ir::parse("program {\n input %x: f32[2, 3]\n %1: f32[6] = reshape(%x)\n output %1 as \"y\"\n}");
    require_verify_error(r, "missing required attribute 'shape'");
    Program s = mlp();
    const_cast<pd::AttrMap&>(s.ops()[3].attrs)["training"] = int64_t{0};
    require_verify_error(s, "attribute 'training' must be bool");
  }
  SECTION("outputs") {
    Program p;
    p.add_input("x", {DType::f32, {2}});
    require_verify_error(p, "no outputs");
    CHECK_THROWS_WITH(mlp().mark_output(0, "logits"), Catch::Contains("taken"));
  }
}

TEST_CASE("ir: rewriting primitives keep the program consistent", "[ir]") {
  Program p = mlp();
  const auto& ops = p.ops();
  // Bypass dropout, then drop it: compact() removes its values and keeps ids canonical.
  p.replace_uses(ops[3].results[0], ops[2].results[0]);
  p.remove_ops({3});
  p.compact();
  pd::ir::verify(p);
  CHECK(p.ops().size() == 4);
  CHECK(p.values().size() == 1 + 3 + 4);
  // An unused param is dropped with its tensor.
  Program q = mlp();
  q.add_param("unused", rnd({2}, 9));
  q.compact();
  CHECK(q.find("unused") == pd::ir::kNoValue);
  CHECK(q.params().count("unused") == 0);
  // insert_op places the op and shifts the producers after it.
  Program r = mlp();
  auto extra = r.insert_op(1, "relu", {{r.ops()[0].results[0]}}, {});
  CHECK(r.ops()[1].results == extra);
  CHECK(r.value(r.ops()[2].results[0]).producer == 2);
  pd::ir::verify(r);
  r.compact();  // canonical ids, which is what parse() gives back
  check_round_trip(r);
  CHECK(r.unique_name("fc1.weight") == "fc1.weight.1");
}
