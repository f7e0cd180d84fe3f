// pd-train --check: validate a model YAML and print its per-layer table.
#pragma once
#include "pd/model/network.h"

namespace pd::tools {

void print_layer_table(const model::ModelSpec& spec, model::Network& net);

}  // namespace pd::tools
