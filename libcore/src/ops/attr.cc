#include "pd/ops/attr.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pd/ops/op_schema.h"

namespace pd {

std::string attr_str(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<X, DType>) return dtype_name(x);
        else if constexpr (std::is_same_v<X, std::string>) return x;
        else if constexpr (std::is_same_v<X, std::vector<int64_t>> || std::is_same_v<X, std::vector<double>>)
          return fmt::format("[{}]", fmt::join(x, ", "));
        else return fmt::format("{}", x);
      },
      v);
}

const OpSchema& op_schema(const std::string& name) {
  for (const auto& s : all_op_schemas())
    if (s.name == name) return s;
  raise(ErrorCode::kInvalidArgument, "unknown op '{}' (see docs/ops.md for the {} ops)", name, op_count());
}

}  // namespace pd

namespace pd {

const Shape& ShapeEnv::get(const char* name) const {
  for (const auto& [n, s] : shapes)
    if (n == name) return s;
  raise(ErrorCode::kInternal, "FLOP formula names '{}', which is not an input or output of the op", name);
}

double bench_numel(const ShapeEnv& env, const char* name) { return static_cast<double>(shape_numel(env.get(name))); }

double bench_dim(const ShapeEnv& env, const char* name, int64_t axis) {
  const Shape& s = env.get(name);
  return static_cast<double>(s[normalize_axis(axis, static_cast<int64_t>(s.size()), "bench flops")]);
}

}  // namespace pd
