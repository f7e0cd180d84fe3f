// PaddlePaddle 2.x inference .pdmodel (a ProgramDesc protobuf) -> PaddleGraph. Only block 0 is read;
// programs with control flow (sub-blocks) are refused by name.
#include <fmt/format.h>

#include <algorithm>

#include "paddle_graph.h"
#include "paddle_program.pb.h"
#include "pd/io/tensor_file.h"

namespace pd::io::paddle_import {
namespace {

constexpr int kLodTensor = 7, kFeedMinibatch = 9, kFetchList = 10;

AttrValue attr_value(const paddle_proto::OpDesc::Attr& a, bool* control_flow) {
  switch (a.type()) {
    case 0: return static_cast<int64_t>(a.i());
    case 1: return static_cast<double>(a.f());
    case 2: return a.s();
    case 3: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case 4: return std::vector<double>(a.floats().begin(), a.floats().end());
    case 6: return a.b();
    case 7: return std::vector<int64_t>(a.bools().begin(), a.bools().end());
    case 9: return static_cast<int64_t>(a.l());
    case 11: return std::vector<int64_t>(a.longs().begin(), a.longs().end());
    case 12: return std::vector<double>(a.float64s().begin(), a.float64s().end());
    case 15: return a.float64();
    case 16:
      if (a.scalar().type() == 1) return a.scalar().b();
      if (a.scalar().type() == 2) return static_cast<int64_t>(a.scalar().i());
      return a.scalar().r();
    case 17: {
      std::vector<double> v;
      for (const auto& s : a.scalars()) v.push_back(s.type() == 2 ? static_cast<double>(s.i()) : s.type() == 1 ? s.b() : s.r());
      return v;
    }
    case 8:
    case 10: *control_flow = true; return int64_t{0};
    default: return std::string();  // strings lists, variable references: no converter reads them
  }
}

}  // namespace

PaddleGraph read_program_desc(const std::string& path) {
  const std::string bytes = read_file_bytes(path);
  paddle_proto::ProgramDesc desc;
  PD_CHECK(desc.ParseFromString(bytes), ErrorCode::kParse,
           "{}: not a valid PaddlePaddle ProgramDesc (the protobuf does not parse: truncated or corrupted?)", path);
  PD_CHECK(desc.blocks_size() >= 1, ErrorCode::kParse, "{}: the ProgramDesc has no blocks", path);
  PD_CHECK(desc.blocks_size() == 1, ErrorCode::kNotImplemented,
           "{}: the program has {} blocks; control flow (while, conditional_block) is not supported", path,
           desc.blocks_size());
  PaddleGraph g;
  g.format = "ProgramDesc";
  g.version = desc.version().version();
  const auto& block = desc.blocks(0);
  for (const auto& v : block.vars()) {
    const std::string where = fmt::format("{}: variable '{}'", path, v.name());
    PD_CHECK(!v.name().empty(), ErrorCode::kParse, "{}: a variable has no name", path);
    PD_CHECK(!g.vars.count(v.name()), ErrorCode::kParse, "{} is declared twice", where);
    const int kind = v.type().type();
    if (kind == kFeedMinibatch || kind == kFetchList) continue;
    PaddleVar var;
    if (kind == kLodTensor && v.type().has_lod_tensor()) {
      const auto& t = v.type().lod_tensor().tensor();
      var.dtype = dtype_of_var_type(t.data_type(), where);
      var.shape.assign(t.dims().begin(), t.dims().end());
      var.has_type = true;
    }
    g.vars[v.name()] = var;
    if (v.persistable()) {
      PD_CHECK(var.has_type, ErrorCode::kNotImplemented, "{} is persistable but not a dense tensor (kind {})", where, kind);
      g.params.push_back(v.name());
    }
  }
  std::sort(g.params.begin(), g.params.end());  // save_combine writes them in name order

  int64_t index = 0;
  for (const auto& op : block.ops()) {
    PaddleOp p;
    p.type = op.type();
    p.index = index++;
    for (const auto& in : op.inputs()) p.inputs[in.parameter()].assign(in.arguments().begin(), in.arguments().end());
    for (const auto& out : op.outputs()) p.outputs[out.parameter()].assign(out.arguments().begin(), out.arguments().end());
    bool control_flow = false;
    for (const auto& a : op.attrs()) p.attrs[a.name()] = attr_value(a, &control_flow);
    PD_CHECK(!control_flow, ErrorCode::kNotImplemented, "{}: {} has a sub-block; control flow is not supported", path,
             p.where());
    if (p.type == "feed" || p.type == "fetch") {
      const bool feed = p.type == "feed";
      const auto& names = feed ? p.outputs["Out"] : p.inputs["X"];
      auto col = p.attrs.find("col");
      PD_CHECK(names.size() == 1 && col != p.attrs.end() && std::holds_alternative<int64_t>(col->second),
               ErrorCode::kParse, "{}: {} needs one variable and an int 'col'", path, p.where());
      const int64_t c = std::get<int64_t>(col->second);
      auto& list = feed ? g.feeds : g.fetches;
      PD_CHECK(c >= 0 && c < 4096, ErrorCode::kParse, "{}: {} has column {}", path, p.where(), c);
      if (list.size() <= static_cast<size_t>(c)) list.resize(static_cast<size_t>(c) + 1);
      PD_CHECK(list[static_cast<size_t>(c)].empty(), ErrorCode::kParse, "{}: two {} ops use column {}", path, p.type, c);
      list[static_cast<size_t>(c)] = names[0];
      continue;
    }
    g.ops.push_back(std::move(p));
  }
  for (const auto* list : {&g.feeds, &g.fetches})
    for (size_t i = 0; i < list->size(); ++i)
      PD_CHECK(!(*list)[i].empty(), ErrorCode::kParse, "{}: no {} op for column {}", path,
               list == &g.feeds ? "feed" : "fetch", i);
  PD_CHECK(!g.fetches.empty(), ErrorCode::kParse, "{}: the program fetches nothing (not an inference model?)", path);
  g.output_names = g.fetches;
  return g;
}

}  // namespace pd::io::paddle_import
