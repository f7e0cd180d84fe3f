// PaddlePaddle 3.x PIR op names onto the ProgramDesc names of the converter table (import_ops.cc): the
// slots of PIR's positional inputs and outputs, and renamed attributes. A slot "@attr" is a constant input
// (full, full_int_array) that ProgramDesc has as attribute `attr`.
#include "paddle_graph.h"

namespace pd::io::paddle_import {
namespace {

// PIR op names -> ProgramDesc's, with the slots of their positional inputs and outputs.
const std::vector<PirOpName>& pir_rows() {
  static const std::vector<PirOpName> rows = {
      {"abs", "abs", {"X"}, {"Out"}, {}},
      {"add", "elementwise_add", {"X", "Y"}, {"Out"}, {}},
      {"assign", "assign", {"X"}, {"Out"}, {}},
      {"batch_norm", "batch_norm", {"X", "Mean", "Variance", "Scale", "Bias"}, {"Y"}, {}},
      {"batch_norm_", "batch_norm", {"X", "Mean", "Variance", "Scale", "Bias"}, {"Y"}, {}},
      {"bicubic_interp", "bicubic_interp_v2", {"X", "OutSize", "SizeTensor", "Scale"}, {"Out"}, {}},
      {"bilinear_interp", "bilinear_interp_v2", {"X", "OutSize", "SizeTensor", "Scale"}, {"Out"}, {}},
      {"cast", "cast", {"X"}, {"Out"}, {{"dtype", "out_dtype"}}},
      {"clip", "clip", {"X", "@min", "@max"}, {"Out"}, {}},
      {"concat", "concat", {"X", "@axis"}, {"Out"}, {}},
      {"conv2d", "conv2d", {"Input", "Filter"}, {"Output"}, {}},
      {"conv2d_transpose", "conv2d_transpose", {"Input", "Filter", "@output_size"}, {"Output"}, {}},
      {"depthwise_conv2d", "depthwise_conv2d", {"Input", "Filter"}, {"Output"}, {}},
      {"divide", "elementwise_div", {"X", "Y"}, {"Out"}, {}},
      {"dropout", "dropout", {"X", "Seed", "@dropout_prob"}, {"Out", "Mask"}, {{"mode", "dropout_implementation"}}},
      {"elementwise_pow", "elementwise_pow", {"X", "Y"}, {"Out"}, {}},
      {"embedding", "lookup_table_v2", {"Ids", "W"}, {"Out"}, {}},
      {"erf", "erf", {"X"}, {"Out"}, {}},
      {"exp", "exp", {"X"}, {"Out"}, {}},
      {"flatten", "flatten_contiguous_range", {"X"}, {"Out"}, {}},
      {"gelu", "gelu", {"X"}, {"Out"}, {}},
      {"hardsigmoid", "hard_sigmoid", {"X"}, {"Out"}, {}},
      {"hardswish", "hard_swish", {"X"}, {"Out"}, {}},
      {"layer_norm", "layer_norm", {"X", "Scale", "Bias"}, {"Y", "Mean", "Variance"}, {}},
      {"leaky_relu", "leaky_relu", {"X"}, {"Out"}, {{"negative_slope", "alpha"}}},
      {"log", "log", {"X"}, {"Out"}, {}},
      {"log_softmax", "log_softmax", {"X"}, {"Out"}, {}},
      {"matmul", "matmul_v2", {"X", "Y"}, {"Out"}, {{"transpose_x", "trans_x"}, {"transpose_y", "trans_y"}}},
      {"max", "reduce_max", {"X", "@dim"}, {"Out"}, {{"keepdim", "keep_dim"}}},
      {"mean", "reduce_mean", {"X", "@dim"}, {"Out"}, {{"keepdim", "keep_dim"}}},
      {"min", "reduce_min", {"X", "@dim"}, {"Out"}, {{"keepdim", "keep_dim"}}},
      {"multiply", "elementwise_mul", {"X", "Y"}, {"Out"}, {}},
      {"nearest_interp", "nearest_interp_v2", {"X", "OutSize", "SizeTensor", "Scale"}, {"Out"}, {}},
      {"pool2d", "pool2d", {"X", "@ksize"}, {"Out"}, {}},
      {"pow", "elementwise_pow", {"X", "Y"}, {"Out"}, {}},
      {"relu", "relu", {"X"}, {"Out"}, {}},
      {"relu6", "relu6", {"X"}, {"Out"}, {}},
      {"reshape", "reshape2", {"X", "@shape"}, {"Out", "XShape"}, {}},
      {"rsqrt", "rsqrt", {"X"}, {"Out"}, {}},
      {"scale", "scale", {"X", "@scale"}, {"Out"}, {}},
      {"sigmoid", "sigmoid", {"X"}, {"Out"}, {}},
      {"silu", "silu", {"X"}, {"Out"}, {}},
      {"shape", "shape", {"Input"}, {"Out"}, {}},
      {"shape64", "shape", {"Input"}, {"Out"}, {}},
      {"slice", "slice", {"Input", "@starts", "@ends"}, {"Out"}, {}},
      {"softmax", "softmax", {"X"}, {"Out"}, {}},
      {"split", "split", {"X", "@sections", "@axis"}, {"Out"}, {}},
      {"split_with_num", "split", {"X", "@axis"}, {"Out"}, {}},
      {"sqrt", "sqrt", {"X"}, {"Out"}, {}},
      {"squeeze", "squeeze2", {"X", "@axes"}, {"Out", "XShape"}, {}},
      {"subtract", "elementwise_sub", {"X", "Y"}, {"Out"}, {}},
      {"sum", "reduce_sum", {"X", "@dim"}, {"Out"}, {{"keepdim", "keep_dim"}}},
      {"swish", "swish", {"X"}, {"Out"}, {}},
      {"tanh", "tanh", {"X"}, {"Out"}, {}},
      {"transpose", "transpose2", {"X"}, {"Out"}, {{"perm", "axis"}}},
      {"unsqueeze", "unsqueeze2", {"X", "@axes"}, {"Out", "XShape"}, {}},
  };
  return rows;
}

}  // namespace

const PirOpName* find_pir_op(const std::string& pir_type) {
  for (const PirOpName& row : pir_rows())
    if (row.pir == pir_type) return &row;
  return nullptr;
}

}  // namespace pd::io::paddle_import
