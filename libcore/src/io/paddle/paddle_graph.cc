// Small shared pieces of the PaddlePaddle readers: element types and op descriptions.
#include <fmt/format.h>

#include "paddle_graph.h"

namespace pd::io::paddle_import {

std::string PaddleOp::where() const {
  for (const char* slot : {"Out", "Output", "Y"}) {
    auto it = outputs.find(slot);
    if (it != outputs.end() && !it->second.empty()) return fmt::format("op #{} {} (-> {})", index, type, it->second[0]);
  }
  for (const auto& [slot, names] : outputs)
    if (!names.empty()) return fmt::format("op #{} {} (-> {})", index, type, names[0]);
  return fmt::format("op #{} {}", index, type);
}

DType dtype_of_var_type(int code, const std::string& where) {
  switch (code) {
    case 0: return DType::boolean;
    case 2: return DType::i32;
    case 3: return DType::i64;
    case 4: return DType::f16;
    case 5: return DType::f32;
    case 6: return DType::f64;
    case 20: return DType::u8;
    case 21: return DType::i8;
    case 22: return DType::bf16;
    default:
      raise(ErrorCode::kNotImplemented, "{}: Paddle element type {} (int16, complex, strings, ...) has no dtype here",
            where, code);
  }
}

DType dtype_of_pir_type(const std::string& name, const std::string& where) {
  static const std::map<std::string, DType> kTypes = {
      {"0.t_bool", DType::boolean}, {"0.t_i32", DType::i32}, {"0.t_i64", DType::i64}, {"0.t_f16", DType::f16},
      {"0.t_f32", DType::f32},      {"0.t_f64", DType::f64}, {"0.t_ui8", DType::u8},  {"0.t_i8", DType::i8},
      {"0.t_bf16", DType::bf16},    {"bool", DType::boolean}, {"int32", DType::i32},  {"int64", DType::i64},
      {"float16", DType::f16},      {"float32", DType::f32}, {"float64", DType::f64}, {"uint8", DType::u8},
      {"int8", DType::i8},          {"bfloat16", DType::bf16}};
  auto it = kTypes.find(name);
  PD_CHECK(it != kTypes.end(), ErrorCode::kNotImplemented, "{}: Paddle element type '{}' has no dtype here", where, name);
  return it->second;
}

}  // namespace pd::io::paddle_import
