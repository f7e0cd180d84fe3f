// The registry of model-YAML layer types (layers.cc), which families of layers in other files join.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>

#include "pd/model/layers.h"

namespace pd::model {

using LayerFactory = std::unique_ptr<Layer> (*)(const LayerSpec&);
template <typename L>
std::unique_ptr<Layer> create(const LayerSpec& s) {
  return std::make_unique<L>(s);
}

struct TypeInfo {
  LayerFactory factory;
  std::set<std::string> keys;  // besides name, type, input, inputs
};

// multi_head_attention, transformer_encoder_layer, patch_embedding, positional_embedding, class_token,
// mean_pool, select_token (transformer_layers.cc).
void add_transformer_layers(std::map<std::string, TypeInfo>& registry);

// conv2d_transpose, upsample (decoder_layers.cc).
void add_decoder_layers(std::map<std::string, TypeInfo>& registry);

}  // namespace pd::model
