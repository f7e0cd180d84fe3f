// The layer library of model YAMLs. A layer declares its keys, creates its parameters once it knows
// its input shapes, and computes its output with the generated op API.
#pragma once
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pd/model/network.h"

namespace pd::model {

struct ForwardCtx {
  bool training = false;
  uint64_t seed = 0;  // per step and layer, for dropout
  const CrossRankSum* cross_rank_sum = nullptr;  // set for sync_batch_norm under pd-dist
  bool channels_last = false;  // the inputs are [N, H, W, C] and so must the result be (runs_channels_last)
};

// Creates parameters with PyTorch's default initialisation, seeded so that runs are reproducible.
class ParamFactory {
 public:
  ParamFactory(std::vector<ParamInfo>& params, uint64_t seed) : params_(params), rng_(seed) {}
  Tensor uniform(const std::string& name, const Shape& shape, double bound);
  Tensor constant(const std::string& name, const Shape& shape, double value, bool trainable = true);
  // A value computed by the layer (a sinusoidal table): saved with the model, never trained.
  Tensor buffer(const std::string& name, const Tensor& value);

 private:
  std::vector<ParamInfo>& params_;
  std::mt19937_64 rng_;
};

class Layer {
 public:
  explicit Layer(LayerSpec spec) : spec_(std::move(spec)) {}
  virtual ~Layer() = default;
  virtual void build(const std::vector<Shape>& in_shapes, ParamFactory& params) {}
  virtual Tensor forward(const std::vector<Tensor>& in, const ForwardCtx& ctx) = 0;
  // relu(forward(in)) in one op, for a layer whose kernel can apply the relu in the same pass
  // (batch_norm's fuse_relu); undefined where it cannot, and the network runs the two layers in turn.
  virtual Tensor forward_relu(const std::vector<Tensor>& in, const ForwardCtx& ctx) { return Tensor(); }
  // relu(forward(in) + residual) in one op (batch_norm_add_relu: a residual block's tail); undefined where
  // the layer cannot, and the network runs the three layers in turn.
  virtual Tensor forward_add_relu(const std::vector<Tensor>& in, const Tensor& residual, const ForwardCtx& ctx) { return Tensor(); }
  // Whether forward() takes 4-D inputs in [N, H, W, C] when ctx.channels_last says so, and returns its
  // result in that layout: the network then keeps a chain of such layers in NHWC (conv2d, batch_norm,
  // elementwise activations, add).
  virtual bool runs_channels_last() const { return false; }
  const LayerSpec& spec() const { return spec_; }
  int64_t param_count() const { return param_count_; }

 protected:
  // Typed access to the layer's YAML keys; errors carry the file position.
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::vector<int64_t> get_pair(const std::string& key, std::vector<int64_t> fallback) const;  // int or [a, b]
  std::vector<int64_t> get_ints(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& fallback, const std::set<std::string>& allowed) const;
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  void expect_inputs(const std::vector<Shape>& in, size_t n) const;
  Tensor add_param(ParamFactory& pf, const std::string& suffix, const Shape& shape, double bound);
  Tensor add_constant(ParamFactory& pf, const std::string& suffix, const Shape& shape, double value);
  // A part of a composite layer (the attention inside an encoder layer): its own spec, named
  // PARENT.SUFFIX so that its parameters are too, built here and counted in this layer's parameters.
  std::unique_ptr<Layer> build_child(const std::string& type, const std::string& suffix, AttrMap attrs,
                                     const std::vector<Shape>& in, ParamFactory& pf);

  LayerSpec spec_;
  int64_t param_count_ = 0;
};

// The keys each layer type accepts (besides name, type, input, inputs); unknown keys are errors.
const std::set<std::string>* layer_keys(const std::string& type);
std::vector<std::string> layer_types();
std::unique_ptr<Layer> make_layer(const LayerSpec& spec);

}  // namespace pd::model
