// The indexing converters of the ONNX import table (import_ops.cc): Gather (also of shape computations),
// GatherND and ScatterND with indices known at import time, GatherElements.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "import_converters.h"

namespace pd::io::onnx_import {

// Gather with constant indices of rank 0 or 1 is slicing (a scalar index also drops the axis; a list of
// indices concatenates one slice per index); a constant table indexed by a run-time tensor along its rows is
// an embedding; anything else is the gather op (position ids of rank 2 into a position table, indices
// computed at run time).
void gather(NodeContext& c) {
  const bool const_indices = c.is_constant(1);
  if (c.is_symbolic(0)) {
    const SymbolicInts s = c.ints(0, "input");
    const Tensor idx = c.constant(1, "Gather's indices into a shape computation");
    if (idx.dim() > 1) c.unsupported("Gather of a shape computation with indices of rank > 1");
    SymbolicInts out;
    out.scalar = idx.dim() == 0;
    const int64_t n = static_cast<int64_t>(s.values.size());
    for (int64_t i : idx.to_vector<int64_t>()) {
      const int64_t k = i < 0 ? i + n : i;
      if (k < 0 || k >= n) c.fail(fmt::format("index {} is out of range for {} entries", i, n));
      out.values.push_back(s.values[k]);
      out.symbols.push_back(s.symbols[k]);
    }
    return c.output_ints(0, out);
  }
  const ValueId data = c.input(0);
  if (rank_of(c, data) == 0) c.fail("Gather's data must have rank 1 or more");
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), rank_of(c, data));
  if (!const_indices && c.is_constant(0) && axis == 0 && rank_of(c, data) == 2)
    return c.output(0, c.op("embedding", {{c.input(1)}, {data}}));
  if (!const_indices || rank_of(c, c.input(1)) > 1) return c.output(0, c.op("gather", {{data}, {c.input(1)}}, {{"axis", axis}}));
  const Tensor idx = c.constant(1, "Gather's indices");
  const int64_t extent = c.type(data).shape[axis];
  auto take = [&](int64_t i) {
    if (i < 0 && extent < 0) c.unsupported("a negative Gather index on a dynamic extent");
    const int64_t k = i < 0 ? i + extent : i;
    if (k < 0 || (extent >= 0 && k >= extent)) c.fail(fmt::format("index {} is out of range for extent {}", i, extent));
    return c.op("slice", {{data}}, {{"axes", Ints{axis}}, {"starts", Ints{k}}, {"ends", Ints{k + 1}}});
  };
  const Ints indices = idx.to_vector<int64_t>();
  if (idx.dim() == 0) return c.output(0, c.op("squeeze", {{take(indices[0])}}, {{"axis", Ints{axis}}}));
  std::vector<ValueId> parts;
  for (int64_t i : indices) parts.push_back(take(i));
  c.output(0, parts.size() == 1 ? parts[0] : c.op("concat", {parts}, {{"axis", axis}}));
}

// GatherND with indices known at import time (the dynamo exporter's attention masks: mask[arange(batch)[:, None],
// arange(seq)] over a fixed batch and sequence): the indexed axes flattened into one, the index tuples turned
// into positions along it, one gather. Tuples that walk every position in order read the data as it is.
void gather_nd(NodeContext& c) {
  if (c.attr_int("batch_dims", 0) != 0) c.unsupported("GatherND with batch_dims other than 0");
  if (!c.is_constant(1))
    c.unsupported("GatherND with indices computed at run time; fix the dynamic extents they depend on with --input-shape NAME=DIMS");
  const ValueId data = c.input(0);
  const Tensor idx = c.constant(1, "GatherND's indices");
  const Shape ds = c.type(data).shape;  // a copy: adding ops moves the program's values
  const Shape& is = idx.shape();
  if (is.empty()) c.fail("GatherND's indices must have rank 1 or more");
  const auto k = static_cast<size_t>(is.back());
  if (k < 1 || k > ds.size()) c.fail(fmt::format("index tuples of {} for data of rank {}", k, ds.size()));
  Ints strides(k, 1);
  int64_t positions = 1;
  for (size_t d = k; d-- > 0;) {
    if (ds[d] < 0) c.unsupported(fmt::format("GatherND over a dynamic extent (axis {}); give --input-shape NAME=DIMS", d));
    strides[d] = positions;
    positions *= ds[d];
  }
  const Ints tuples = idx.to_vector<int64_t>();
  Ints linear;
  bool in_order = true;
  for (size_t t = 0; t * k < tuples.size(); ++t) {
    int64_t at = 0;
    for (size_t d = 0; d < k; ++d) {
      const int64_t i = tuples[t * k + d], j = i < 0 ? i + ds[d] : i;
      if (j < 0 || j >= ds[d]) c.fail(fmt::format("index {} is out of range for extent {} (axis {})", i, ds[d], d));
      at += j * strides[d];
    }
    in_order = in_order && at == static_cast<int64_t>(linear.size());
    linear.push_back(at);
  }
  const Shape lead(is.begin(), is.end() - 1);
  if (in_order && lead == Shape(ds.begin(), ds.begin() + static_cast<std::ptrdiff_t>(k))) return c.output(0, data);
  Shape flat{positions};
  for (size_t d = k; d < ds.size(); ++d) flat.push_back(ds[d]);
  const ValueId rows = k == 1 ? data : c.op("reshape", {{data}}, {{"shape", flat}});
  const ValueId at = c.param(Tensor::from_vector(linear, lead), "gather_nd_positions");
  c.output(0, c.op("gather", {{rows}, {at}}, {{"axis", int64_t{0}}}));
}

// GatherElements is take_along_axis; where the indices are shorter than the data outside the axis (ONNX
// and torch.gather allow it), the data is sliced to their extents first.
void gather_elements(NodeContext& c) {
  ValueId data = c.input(0);
  const ValueId index = c.input(1);
  const int64_t rank = rank_of(c, data);
  if (rank_of(c, index) != rank) c.fail(fmt::format("indices of rank {} for data of rank {}", rank_of(c, index), rank));
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), rank);
  const Shape& ds = c.type(data).shape;
  const Shape& is = c.type(index).shape;
  Ints axes, ends;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis || is[d] == ds[d]) continue;
    if (is[d] < 0 || ds[d] < 0)
      c.unsupported(fmt::format("GatherElements whose indices' extent {} on axis {} may differ from the data's {}", is[d], d, ds[d]));
    if (is[d] > ds[d]) c.fail(fmt::format("the indices' extent {} on axis {} is beyond the data's {}", is[d], d, ds[d]));
    axes.push_back(d);
    ends.push_back(is[d]);
  }
  if (!axes.empty()) data = c.op("slice", {{data}}, {{"axes", axes}, {"starts", Ints(axes.size(), 0)}, {"ends", ends}});
  c.output(0, c.op("take_along_axis", {{data}, {index}}, {{"axis", axis}}));
}

// ScatterND on values known at import time (Swin's shifted-window attention masks: zeros, then each
// window's slice set to its number): a copy of data with the slice data[i_0, ..., i_k-1] set to its
// updates for each index tuple [..., k]. Only the plain form (reduction "none", the only one before
// opset 16); negative indices count from the end, as onnxruntime reads them.
void scatter_nd(NodeContext& c) {
  for (size_t i = 0; i < 3; ++i)
    if (!c.is_constant(i))
      c.unsupported("ScatterND on values computed at run time is not supported: its data, indices and updates must be known at "
                    "import time (initializers, Constants, or computable from them and the input extents)");
  if (const std::string r = c.attr_string("reduction", "none"); r != "none")
    c.unsupported(fmt::format("ScatterND with reduction '{}' is not supported (only 'none')", r));
  const Tensor data = c.constant(0, "ScatterND's data"), indices = c.constant(1, "ScatterND's indices");
  const Tensor updates = c.constant(2, "ScatterND's updates").contiguous();
  if (!is_integral(indices.dtype())) c.fail(fmt::format("ScatterND's indices must be integers, got {}", dtype_name(indices.dtype())));
  if (updates.dtype() != data.dtype())
    c.fail(fmt::format("ScatterND's updates are {} but its data {}", dtype_name(updates.dtype()), dtype_name(data.dtype())));
  const Shape &ds = data.shape(), &is = indices.shape();
  const int64_t k = is.empty() ? 0 : is.back();
  if (k < 1 || k > static_cast<int64_t>(ds.size()))
    c.fail(fmt::format("ScatterND's indices {} must end in 1..{} (the data's rank), for data {}", shape_str(is), ds.size(), shape_str(ds)));
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), ds.begin() + k, ds.end());
  if (updates.shape() != want)
    c.fail(fmt::format("ScatterND's updates are {} where indices {} into data {} take {}", shape_str(updates.shape()), shape_str(is),
                       shape_str(ds), shape_str(want)));
  int64_t slice = 1;  // elements a tuple writes
  for (size_t d = static_cast<size_t>(k); d < ds.size(); ++d) slice *= ds[d];
  std::vector<int64_t> stride(static_cast<size_t>(k), slice);  // elements per step of index j
  for (int64_t j = k - 2; j >= 0; --j) stride[static_cast<size_t>(j)] = stride[static_cast<size_t>(j + 1)] * ds[static_cast<size_t>(j + 1)];
  Tensor out = data.contiguous().clone();
  const size_t bytes = dtype_size(data.dtype()) * static_cast<size_t>(slice);
  const std::vector<int64_t> at = indices.to_vector<int64_t>();
  auto* dst = static_cast<char*>(out.raw_data());
  const auto* src = static_cast<const char*>(updates.raw_data());
  for (size_t t = 0; t * static_cast<size_t>(k) < at.size(); ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t extent = ds[static_cast<size_t>(j)], i = at[t * static_cast<size_t>(k) + static_cast<size_t>(j)];
      if (i < -extent || i >= extent)
        c.fail(fmt::format("ScatterND's index {} of tuple {} is out of range for extent {} of data {}", i, t, extent, shape_str(ds)));
      offset += (i < 0 ? i + extent : i) * stride[static_cast<size_t>(j)];
    }
    std::memcpy(dst + static_cast<size_t>(offset) * dtype_size(data.dtype()), src + t * bytes, bytes);
  }
  c.output(0, c.param(out, c.node().output(0)));
}

}  // namespace pd::io::onnx_import
