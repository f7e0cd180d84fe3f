// The data a training run reads: each source of the model YAML loaded and shaped as the network's
// feature input expects, with the checks that point at the YAML line (sample counts, dtypes, NaN/Inf).
#pragma once
#include <cstdint>

#include "pd/data/loader.h"
#include "pd/model/network.h"

namespace pd::train {

// Loads one data source; `limit` > 0 keeps the first samples only (else the source's own limit).
data::Dataset load_source(const model::DataSourceSpec& src, const model::InputSpec& input, int64_t limit);
// The network's input that is not the label.
const model::InputSpec& feature_input(const model::ModelSpec& spec);

}  // namespace pd::train
