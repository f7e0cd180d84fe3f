// The pass registry, the default match/rewrite driver, the PassManager and its report.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "passes/passes.h"
#include "pd/ir/pass.h"
#include "pd/ops/op_schema.h"

namespace pd::ir {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Pass> (*make)();
};

// Registry order is the order levels run them: shrink first (identities, constants, duplicates),
// then fold and fuse, then sweep what became dead. int8_lower takes the quantized convs and linears
// with their fused activations, before the f32-only conv rewrites could; int8_channels_last then
// moves the int8 convs to NHWC. channel_blocking takes chains of f32 convolutions before conv_winograd
// could take their 3x3 ones apart; global_pool_fuse then reads the layout both leave at the network's
// global pool.
const std::vector<Entry>& registry() {
  static const std::vector<Entry> r = {
      {"identity_elim", passes::identity_elimination},     {"constant_fold", passes::constant_folding},
      {"cse", passes::common_subexpression_elimination},    {"bn_fold", passes::batch_norm_folding},
      {"conv_tap_trim", passes::conv_tap_trim},
      {"attention_fuse", passes::attention_fusion},         {"layer_norm_fuse", passes::layer_norm_fusion},
      {"gelu_fuse", passes::gelu_fusion},                   {"clip_relu6", passes::clip_relu6},
      {"swish_fuse", passes::swish_fusion},
      {"linear_bias_fuse", passes::linear_bias_fusion},
      {"attention_qkv_fuse", passes::attention_qkv_fusion},  {"conv_residual_fuse", passes::conv_residual_fusion},
      {"conv_act_fuse", passes::conv_activation_fusion},
      {"linear_residual_fuse", passes::linear_residual_fusion}, {"linear_act_fuse", passes::linear_activation_fusion},
      {"int8_lower", passes::int8_lowering},                {"int8_channels_last", passes::int8_channels_last},
      {"weight_only_lower", passes::weight_only_lowering},
      {"conv_pool_fuse", passes::conv_pool_fusion},
      {"channel_blocking", passes::channel_blocking},
      {"conv_winograd", passes::conv_winograd},
      {"global_pool_fuse", passes::global_pool_fusion},
      {"elementwise_fuse", passes::elementwise_fusion},     {"dce", passes::dead_code_elimination},
  };
  return r;
}

const ArgSchema& attr_schema(const Operation& op, const std::string& name) {
  for (const ArgSchema& a : op_schema(op.type).args)
    if (a.name == name && !a.is_tensor()) return a;
  raise(ErrorCode::kInternal, "pass: op '{}' has no attribute '{}'", op.type, name);
}

}  // namespace

void Pass::run(Program& p, PassStats& stats) const {
  const std::vector<std::string> types = targets();
  // Every rewrite removes or replaces the matched op, so a rescan terminates; the cap turns a pass
  // bug that would loop forever into an error.
  const int64_t cap = 4 * static_cast<int64_t>(p.ops().size()) + 16;
  int32_t i = 0;
  while (i < static_cast<int32_t>(p.ops().size())) {
    const Operation& op = p.ops()[i];
    const bool targeted = types.empty() || std::find(types.begin(), types.end(), op.type) != types.end();
    if (targeted && !(!types.empty() && channels_last_op(op)) && match(p, i)) {
      PD_CHECK(++stats.rewrites <= cap, ErrorCode::kInternal, "pass '{}' keeps matching (more than {} rewrites)", name(), cap);
      rewrite(p, i, stats);
      i = 0;  // indices shifted; earlier ops may match now (a chain of dead ops)
      continue;
    }
    ++i;
  }
  p.compact();
}

std::vector<std::string> pass_names() {
  std::vector<std::string> out;
  for (const Entry& e : registry()) out.push_back(e.name);
  return out;
}

std::unique_ptr<Pass> make_pass(const std::string& name) {
  for (const Entry& e : registry())
    if (name == e.name) return e.make();
  raise(ErrorCode::kInvalidArgument, "unknown pass '{}' (valid passes: {})", name, fmt::join(pass_names(), ", "));
}

std::vector<std::string> level_passes(int level) {
  PD_CHECK(level >= 0 && level <= 3, ErrorCode::kInvalidArgument, "optimisation level must be 0 to 3, but received {}", level);
  if (level == 0) return {};
  if (level == 1) return {"identity_elim", "cse", "dce"};
  std::vector<std::string> out;  // O2 and O3 (O3 adds nothing yet): every portable pass
  for (const Entry& e : registry())
    if (!e.make()->lowering()) out.push_back(e.name);
  return out;
}

std::vector<std::string> lowering_passes() {
  std::vector<std::string> out;
  for (const Entry& e : registry())
    if (e.make()->lowering()) out.push_back(e.name);
  out.push_back("dce");
  return out;
}

PassManager::PassManager(const PassOptions& options) : options_(options) {
  for (const std::string& n : options.passes) make_pass(n);
  for (const std::string& n : options.disable) make_pass(n);
  names_ = options.passes.empty() ? level_passes(options.level) : options.passes;
  if (options.passes.empty() && options.lower)
    for (const std::string& n : lowering_passes()) names_.push_back(n);
  std::erase_if(names_, [&](const std::string& n) {
    return std::find(options.disable.begin(), options.disable.end(), n) != options.disable.end();
  });
  std::erase_if(names_, [&](const std::string& n) {
    const bool off = !make_pass(n)->supports(options.target);
    if (off) skipped_.push_back(n);
    return off;
  });
}

std::vector<PassStats> PassManager::run(Program& p) const {
  std::vector<PassStats> report;
  const std::string target = options_.target.str();
  for (const std::string& n : names_) {
    PassStats s;
    s.pass = n;
    s.ops_before = static_cast<int64_t>(p.ops().size());
    auto t0 = std::chrono::steady_clock::now();
    const std::unique_ptr<Pass> pass = make_pass(n);
    PD_CHECK(!pass->lowering() || p.target().empty() || p.target() == target, ErrorCode::kInvalidArgument,
             "pass '{}' cannot lower for {}: the program is already lowered for {} (lower the portable model instead)",
             n, target, p.target());
    pass->set_target(options_.target);
    pass->set_batch_hint(options_.batch_hint);
    pass->run(p, s);
    if (pass->lowering() && s.rewrites > 0) p.set_target(target);
    s.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.ops_after = static_cast<int64_t>(p.ops().size());
    if (options_.verify_each) {
      try {
        verify(p);
      } catch (const Error& e) {
        raise(ErrorCode::kInternal, "pass '{}' produced an invalid program: {}", n, e.what());
      }
    }
    if (options_.print_after) *options_.print_after << "// after " << n << "\n" << print(p);
    report.push_back(s);
  }
  return report;
}

std::string format_report(const std::vector<PassStats>& stats) {
  std::string out = fmt::format("{:<20} {:>6} {:>6} {:>8} {:>6} {:>7} {:>9}\n", "pass", "before", "after", "removed",
                                "fused", "folded", "time ms");
  PassStats total;
  for (const PassStats& s : stats) {
    out += fmt::format("{:<20} {:>6} {:>6} {:>8} {:>6} {:>7} {:>9.3f}\n", s.pass, s.ops_before, s.ops_after, s.removed,
                       s.fused, s.folded, s.ms);
    total.removed += s.removed, total.fused += s.fused, total.folded += s.folded, total.ms += s.ms;
  }
  if (!stats.empty())
    out += fmt::format("{:<20} {:>6} {:>6} {:>8} {:>6} {:>7} {:>9.3f}\n", "total", stats.front().ops_before,
                       stats.back().ops_after, total.removed, total.fused, total.folded, total.ms);
  return out;
}

bool is_param(const Program& p, ValueId v) {
  return v != kNoValue && p.value(v).kind == ValueKind::Param && p.params().count(p.value(v).name);
}

size_t tensor_slots(const std::string& op_type) {
  const auto& args = op_schema(op_type).args;
  return static_cast<size_t>(std::count_if(args.begin(), args.end(), [](const ArgSchema& a) { return a.is_tensor(); }));
}

ValueId input_of(const Program& p, int32_t op, size_t slot) {
  const auto& ins = p.ops()[op].inputs;
  return slot < ins.size() && !ins[slot].empty() ? ins[slot][0] : kNoValue;
}

bool channels_last_op(const Operation& op) {
  return (op.type == "conv2d" || op.type == "batch_norm") && attr_bool(op, "channels_last");
}

bool attr_bool(const Operation& op, const std::string& name) {
  if (auto it = op.attrs.find(name); it != op.attrs.end()) return std::get<bool>(it->second);
  return attr_schema(op, name).default_text == "true";
}

double attr_float(const Operation& op, const std::string& name) {
  if (auto it = op.attrs.find(name); it != op.attrs.end()) return std::get<double>(it->second);
  return std::stod(attr_schema(op, name).default_text);
}

std::string attr_string(const Operation& op, const std::string& name) {
  if (auto it = op.attrs.find(name); it != op.attrs.end()) return std::get<std::string>(it->second);
  return attr_schema(op, name).default_text;
}

int64_t attr_int(const Operation& op, const std::string& name) {
  if (auto it = op.attrs.find(name); it != op.attrs.end()) return std::get<int64_t>(it->second);
  return std::stoll(attr_schema(op, name).default_text);
}

// Defaults of int[] attributes are written as in ops.yaml: "[1, 1]", "[]".
namespace {
// A list attribute's schema default ("[1, 1]", "[]") as its numbers.
template <typename T>
std::vector<T> default_list(const Operation& op, const std::string& name) {
  std::string text = attr_schema(op, name).default_text;
  std::replace(text.begin(), text.end(), ',', ' ');
  std::erase_if(text, [](char c) { return c == '[' || c == ']'; });
  std::vector<T> out;
  std::istringstream in(text);
  for (T v; in >> v;) out.push_back(v);
  return out;
}
}  // namespace

std::vector<int64_t> attr_ints(const Operation& op, const std::string& name) {
  if (auto it = op.attrs.find(name); it != op.attrs.end()) return std::get<std::vector<int64_t>>(it->second);
  return default_list<int64_t>(op, name);
}

std::vector<double> attr_floats(const Operation& op, const std::string& name) {
  if (auto it = op.attrs.find(name); it != op.attrs.end()) return std::get<std::vector<double>>(it->second);
  return default_list<double>(op, name);
}

}  // namespace pd::ir
