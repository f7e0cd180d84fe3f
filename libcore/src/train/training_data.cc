#include "training_data.h"

#include "op_api.h"
#include "pd/core/error.h"
#include "pd/data/readers.h"
#include "non_finite_check.h"

namespace pd::train {
namespace {

// NaN or Inf in the features would make the loss NaN at some step far from its cause: refuse them here.
// (The CSV reader checks its own values, with line and column.)
void check_finite_features(const Tensor& features, const model::DataSourceSpec& src) {
  if (!is_floating(features.dtype()) || features.dim() == 0 || features.shape()[0] == 0) return;
  const std::string bad = first_non_finite(features);
  if (bad.empty()) return;
  raise(ErrorCode::kInvalidArgument,
        "{}: {} holds a non-finite feature value ({}; the first index is the sample); clean the data, or set "
        "allow_non_finite: true in this data source to train on it anyway",
        src.pos.str(), src.features, bad);
}

}  // namespace

// Loads one data source and shapes its features as the network's feature input expects.
data::Dataset load_source(const model::DataSourceSpec& src, const model::InputSpec& input, int64_t limit) {
  if (limit <= 0) limit = src.limit;
  data::Dataset d;
  int64_t n = 0, labelled = 0;  // the files' sample counts (IDX files are read up to the limit only)
  if (src.format == "csv") {
    data::CsvTable t = data::read_csv(src.features, src.label_column, src.header, src.allow_non_finite);
    d = {t.features, t.labels};
  } else if (src.format == "idx") {
    d.features = data::read_idx(src.features, limit > 0 ? limit : -1, &n);
    d.labels = data::read_idx(src.labels, limit > 0 ? limit : -1, &labelled);
  } else {
    d.features = data::read_npy(src.features);
    d.labels = data::read_npy(src.labels);
  }
  if (src.format != "idx") {
    n = d.features.dim() > 0 ? d.features.shape()[0] : 0;
    labelled = d.labels.dim() == 1 ? d.labels.shape()[0] : -1;
  }
  PD_CHECK(d.labels.dim() == 1 && labelled == n, ErrorCode::kShape,
           "{}: {} has {} samples but the labels {} have shape {}", src.pos.str(), src.features, n, src.labels,
           d.labels.dim() == 1 ? shape_str({labelled}) : shape_str(d.labels.shape()));
  n = d.features.dim() > 0 ? d.features.shape()[0] : 0;  // what was read
  PD_CHECK(is_integral(d.labels.dtype()), ErrorCode::kDType, "{}: labels in {} must be integers, but are {}", src.pos.str(),
           src.labels, dtype_name(d.labels.dtype()));
  const int64_t per_sample = n > 0 ? d.features.numel() / n : 0;
  PD_CHECK(per_sample == shape_numel(input.shape), ErrorCode::kShape,
           "{}: samples in {} have {} values (shape {} per sample), but input '{}' expects {} ({} values)", src.pos.str(),
           src.features, per_sample, shape_str(Shape(d.features.shape().begin() + 1, d.features.shape().end())), input.name,
           shape_str(input.shape), shape_numel(input.shape));
  if (src.format != "csv" && !src.allow_non_finite) check_finite_features(d.features, src);
  if (limit > 0) d = d.first(limit);
  Shape s = {d.features.shape()[0]};
  s.insert(s.end(), input.shape.begin(), input.shape.end());
  d.features = ops::reshape(d.features, s);
  d.labels = ops::cast(d.labels, DType::i64);
  return d;
}

const model::InputSpec& feature_input(const model::ModelSpec& spec) {
  for (const auto& in : spec.inputs)
    if (in.name != spec.label_input) return in;
  raise(ErrorCode::kInvalidArgument, "{}: the model has no feature input besides the label '{}'", spec.file, spec.label_input);
}

}  // namespace pd::train
