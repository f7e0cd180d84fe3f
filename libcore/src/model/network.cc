#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "pd/model/layers.h"
#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/backend.h"
#include "pd/model/network.h"

namespace pd::model {
namespace {

// Rethrows an op error from inside a layer with the layer's file position, so that a shape mismatch
// between layers points at the YAML line.
template <typename F>
auto at_layer(const LayerSpec& l, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind(l.pos.file, 0) == 0) throw;  // already positioned
    raise(e.code(), "{}: layer '{}' ({}): {}", l.pos.str(), l.name, l.type, msg);
  }
}

// A network's convolutions run in NHWC when one of them has at least this many input and output
// channels: oneDNN's convolutions then reorder NCHW tensors into their own layouts and back at every
// call (about a fifth of the residual example's step), while NHWC is a layout they run on as it is.
// Narrower convolutions (LeNet's 1 -> 6 -> 16) run in the direct NCHW kernels, faster there. Without
// oneDNN (a build without it) the reference kernel computes in NCHW, so NHWC would only add copies.
constexpr int64_t kChannelsLastMinChannels = 16;

// Which layers run in NHWC (see Network::channels_last_): a layer that can (runs_channels_last), with
// 4-D inputs of its output's shape (a convolution: any 4-D input), that is a convolution or reads a
// value held in NHWC. The loss input stays NCHW.
std::vector<bool> channels_last_plan(const std::vector<std::unique_ptr<Layer>>& layers, const std::map<std::string, Tensor>& probe,
                                     const std::string& loss_input) {
  std::vector<bool> plan(layers.size(), false);
  bool wide = false;
  for (const auto& l : layers) {
    if (l->spec().type != "conv2d") continue;
    const Shape &in = probe.at(l->spec().inputs[0]).shape(), &out = probe.at(l->spec().name).shape();
    wide = wide || (in[1] >= kChannelsLastMinChannels && out[1] >= kChannelsLastMinChannels);
  }
  if (!wide || !cpu_backend_built(Backend::onednn)) return plan;
  std::set<std::string> nhwc;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i]->spec();
    const Shape& out = probe.at(l.name).shape();
    const bool conv = l.type == "conv2d";
    bool fits = layers[i]->runs_channels_last() && out.size() == 4 && l.name != loss_input, reads_nhwc = false;
    for (const auto& name : l.inputs) {
      const Shape& in = probe.at(name).shape();
      fits = fits && in.size() == 4 && (conv || in == out);
      reads_nhwc = reads_nhwc || nhwc.count(name);
    }
    plan[i] = fits && (conv || reads_nhwc);
    if (plan[i]) nhwc.insert(l.name);
  }
  return plan;
}

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 29);
}

}  // namespace

Network::Network(const ModelSpec& spec) : spec_(spec) {
  ParamFactory pf(params_, mix(spec.train.seed, 0x1217));
  std::map<std::string, Shape> shapes;
  std::map<std::string, Tensor> probe;
  // A probe batch of 2 zeros infers every layer's shape and builds its parameters.
  for (const auto& in : spec.inputs) {
    Shape s = {2};
    s.insert(s.end(), in.shape.begin(), in.shape.end());
    probe[in.name] = ops::zeros(s, in.dtype);
  }
  NoGradGuard no_grad;
  for (const auto& l : spec.layers) {
    std::vector<Shape> in_shapes;
    std::vector<Tensor> in;
    for (const auto& name : l.inputs) {
      in.push_back(probe.at(name));
      in_shapes.push_back(probe.at(name).shape());
    }
    auto layer = make_layer(l);
    size_t before = params_.size();
    at_layer(l, [&] {
      layer->build(in_shapes, pf);
      return 0;
    });
    // Probe with copies of the buffers so that running statistics stay at their initial values.
    std::vector<Tensor> saved;
    for (size_t i = before; i < params_.size(); ++i) saved.push_back(params_[i].value.clone());
    Tensor out = at_layer(l, [&] { return layer->forward(in, ForwardCtx{false, 0}); });
    for (size_t i = before; i < params_.size(); ++i)
      std::memcpy(params_[i].value.raw_data(), saved[i - before].raw_data(), saved[i - before].storage()->bytes);
    probe[l.name] = out;
    Shape shown = out.shape();
    std::string shape_text = "[N";
    for (size_t d = 1; d < shown.size(); ++d) shape_text += fmt::format(", {}", shown[d]);
    rows_.push_back({l.name, l.type, shape_text + "]", layer->param_count()});
    for (const auto& name : l.inputs) last_reader_[name] = layers_.size();
    layers_.push_back(std::move(layer));
  }
  std::map<std::string, int> readers;
  for (const auto& l : spec.layers)
    for (const auto& name : l.inputs) ++readers[name];
  // Whether value `name` has exactly one reader and is not the loss's input.
  auto single_use = [&](const std::string& name) { return readers[name] == 1 && name != spec.loss_input; };
  pairing_.assign(layers_.size(), Pairing::none);
  for (size_t i = 0; i + 1 < layers_.size(); ++i) {
    const LayerSpec &self = layers_[i]->spec(), &next = layers_[i + 1]->spec();
    if (!single_use(self.name)) continue;
    if (self.type == "batch_norm" && next.type == "add" && next.inputs.size() == 2 && i + 2 < layers_.size()) {
      const LayerSpec& after = layers_[i + 2]->spec();
      const std::string& other = next.inputs[0] == self.name ? next.inputs[1] : next.inputs[0];
      if (other != self.name && probe.at(other).shape() == probe.at(self.name).shape() && single_use(next.name) &&
          after.type == "relu" && after.inputs == std::vector<std::string>{next.name})
        pairing_[i] = Pairing::add_relu;
      continue;
    }
    if (next.inputs != std::vector<std::string>{self.name}) continue;
    if (next.type == "relu") pairing_[i] = Pairing::fuse_relu;
    else if (self.type == "relu" && next.type == "max_pool2d") pairing_[i] = Pairing::pool_then_relu;
  }
  channels_last_ = channels_last_plan(layers_, probe, spec.loss_input);
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (channels_last_[i] && pairing_[i] == Pairing::pool_then_relu) pairing_[i] = Pairing::none;  // the pool reads NCHW
    if (pairing_[i] == Pairing::add_relu && (channels_last_[i] != channels_last_[i + 1] || channels_last_[i] != channels_last_[i + 2]))
      pairing_[i] = Pairing::none;  // the three must agree on the layout
  }
}

Network::~Network() = default;

std::map<std::string, Tensor> Network::forward(const std::map<std::string, Tensor>& inputs, bool training, int64_t step,
                                               const std::set<std::string>& keep) {
  std::map<std::string, Tensor> values;
  for (const auto& in : spec_.inputs) {
    auto it = inputs.find(in.name);
    if (it == inputs.end() && in.name == spec_.label_input) continue;  // only the loss reads labels
    PD_CHECK(it != inputs.end(), ErrorCode::kInvalidArgument, "{}: the network needs input '{}'", in.pos.str(), in.name);
    values[in.name] = it->second;
  }
  // Values held in NHWC (channels_last_), and a reader's view of a value in the layout it wants.
  const bool nhwc_run = !keep.empty() && !cross_rank_sum_ && place_.is_cpu();
  std::set<std::string> nhwc;
  auto read = [&](const std::string& name, bool want_nhwc) {
    const Tensor& v = values.at(name);
    if (nhwc.count(name) == static_cast<size_t>(want_nhwc)) return v;
    return ops::transpose(v, want_nhwc ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 3, 1, 2});
  };
  for (size_t i = 0; i < layers_.size(); ++i) {
    const LayerSpec& l = layers_[i]->spec();
    const bool channels_last = nhwc_run && channels_last_[i];
    std::vector<Tensor> in;
    for (const auto& name : l.inputs) in.push_back(read(name, channels_last));
    const uint64_t seed = rng_stream_ == 0 ? spec_.train.seed : mix(spec_.train.seed, rng_stream_);
    auto ctx_of = [&](size_t k) {
      return ForwardCtx{training, mix(mix(seed, static_cast<uint64_t>(step)), k), cross_rank_sum_ ? &cross_rank_sum_ : nullptr,
                        channels_last};
    };
    const ForwardCtx ctx = ctx_of(i);
    // This layer and the next, the only reader of its value, which nobody asked for, run as a pair
    // (with add_relu, a triple: the add's value must not be asked for either).
    const size_t self = i;
    Pairing pairing = !keep.empty() && !keep.count(l.name) ? pairing_[i] : Pairing::none;
    if (pairing == Pairing::add_relu && keep.count(layers_[i + 1]->spec().name)) pairing = Pairing::none;
    Tensor paired;
    size_t last = i + 1;  // the last layer a pairing stands for
    if (pairing == Pairing::fuse_relu) paired = at_layer(l, [&] { return layers_[i]->forward_relu(in, ctx); });
    if (pairing == Pairing::pool_then_relu) {
      const Tensor pooled = at_layer(layers_[i + 1]->spec(), [&] { return layers_[i + 1]->forward(in, ctx_of(i + 1)); });
      paired = at_layer(l, [&] { return layers_[i]->forward({pooled}, ctx); });
    }
    if (pairing == Pairing::add_relu) {
      const std::vector<std::string>& add_in = layers_[i + 1]->spec().inputs;
      const Tensor residual = read(add_in[0] == l.name ? add_in[1] : add_in[0], channels_last);
      paired = at_layer(l, [&] { return layers_[i]->forward_add_relu(in, residual, ctx); });
      last = i + 2;
    }
    if (paired.defined()) values[layers_[i = last]->spec().name] = paired;  // the last layer's value; they are done
    else values[l.name] = at_layer(l, [&] { return layers_[i]->forward(in, ctx); });
    if (channels_last) nhwc.insert(layers_[i]->spec().name);
    if (keep.empty()) continue;
    in.clear();
    for (size_t j = self; j <= i; ++j)  // values whose last reader ran
      for (const auto& name : layers_[j]->spec().inputs)
        if (last_reader_.at(name) == j && !keep.count(name)) values.erase(name);
  }
  if (keep.empty()) return values;
  std::erase_if(values, [&](const auto& kv) { return !keep.count(kv.first); });
  for (auto& [name, v] : values) v = read(name, false);  // kept values are given back in NCHW
  return values;
}

Tensor Network::loss(const std::map<std::string, Tensor>& values, const Tensor& labels) const {
  auto get = [&](const char* key, auto fallback) {
    auto it = spec_.loss_attrs.find(key);
    return it == spec_.loss_attrs.end() ? fallback : std::get<decltype(fallback)>(it->second);
  };
  return ops::cross_entropy(values.at(spec_.loss_input), labels, -1, get("ignore_index", int64_t{-100}),
                            get("label_smoothing", 0.0));
}

std::vector<train::NamedParam> Network::trainable() const {
  std::vector<train::NamedParam> out;
  for (const auto& p : params_)
    if (p.trainable) out.push_back({p.name, p.value});
  return out;
}

std::map<std::string, Tensor> Network::state() const {
  std::map<std::string, Tensor> out;
  for (const auto& p : params_) out[p.name] = p.value;
  return out;
}

void Network::load_state(const std::map<std::string, Tensor>& state, bool allow_missing) {
  for (auto& p : params_) {
    auto it = state.find(p.name);
    if (it == state.end()) {
      PD_CHECK(allow_missing, ErrorCode::kInvalidArgument, "the saved state has no parameter '{}' (shape {})", p.name,
               shape_str(p.value.shape()));
      continue;
    }
    PD_CHECK(it->second.shape() == p.value.shape() && it->second.dtype() == p.value.dtype(), ErrorCode::kShape,
             "parameter '{}': the model expects {} {}, but the saved state has {} {}", p.name, dtype_name(p.value.dtype()),
             shape_str(p.value.shape()), dtype_name(it->second.dtype()), shape_str(it->second.shape()));
    p.value.copy_(it->second);
  }
}

void Network::to(Place place) {
  for (auto& p : params_) p.value.set_data(p.value.to(place));
  place_ = place;
}

std::vector<Network::Row> Network::summary() const { return rows_; }

int64_t Network::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_)
    if (p.trainable) n += p.value.numel();
  return n;
}

}  // namespace pd::model
