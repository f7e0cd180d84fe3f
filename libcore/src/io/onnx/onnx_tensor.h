// TensorProto <-> Tensor, and ONNX element types <-> DType: what the importer and exporter share.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "pd/core/tensor.h"

namespace pd::io::onnx_util {

// The DType of an ONNX element type; throws pd::Error (kNotImplemented) naming `where` for types the
// toolchain has no dtype for (string, complex, unsigned 16/32/64).
DType dtype_of(int32_t onnx_type, const std::string& where);
int32_t onnx_type_of(DType t);

// Reads an initializer or Constant value: raw_data, the typed repeated fields, or external data (a file
// next to the model, `model_dir`). Checks that the byte count matches the dims; errors name `where`.
Tensor to_tensor(const onnx::TensorProto& t, const std::string& model_dir, const std::string& where);
// Writes `t` as raw_data (little-endian, as ONNX requires) under `name`.
void from_tensor(const Tensor& t, const std::string& name, onnx::TensorProto* out);

}  // namespace pd::io::onnx_util
