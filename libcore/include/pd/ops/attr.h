// Attribute values as the runtime (boxed calls, IR, model files) carries them.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "pd/core/dtype.h"

namespace pd {

using AttrValue = std::variant<int64_t, double, bool, std::vector<int64_t>, std::vector<double>, std::string, DType>;
using AttrMap = std::map<std::string, AttrValue>;

std::string attr_str(const AttrValue& v);  // "3", "[1, 2]", "f32", ...

}  // namespace pd
