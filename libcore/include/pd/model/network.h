// A network described by a model YAML: named inputs, a DAG of layers, a loss, the data and the
// training recipe (docs/model-yaml.md). Every error names the file, line and key.
//
//   pd::model::ModelSpec spec = pd::model::load_model_yaml("examples/lenet_fmnist.yaml");
//   pd::model::Network net(spec);                   // parameters initialised from spec.train.seed
//   auto values = net.forward({{"image", x}}, /*training=*/true, /*step=*/0);
//   pd::Tensor loss = net.loss(values, y);
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/data/loader.h"
#include "pd/ops/attr.h"
#include "pd/model/train_config.h"

namespace pd::model {

struct SourcePos {
  std::string file;
  int line = 0, col = 0;
  std::string str() const;  // "FILE:LINE:COL"
};

struct InputSpec {
  std::string name;
  Shape shape;  // per sample; the batch axis is added in front
  DType dtype = DType::f32;
  SourcePos pos;
};

struct LayerSpec {
  std::string name;
  std::string type;
  std::vector<std::string> inputs;  // names of inputs or earlier layers (default: the previous layer)
  AttrMap attrs;                     // the layer's keys, typed
  AttrMap op_attrs;                  // `attrs:` of a raw `op` layer
  std::map<std::string, SourcePos> attr_pos;
  SourcePos pos;
};

struct DataSourceSpec {
  std::string format;  // idx, npy, csv
  std::string features, labels;  // paths (csv: features only, labels in label_column)
  int64_t label_column = -1;
  bool header = false;
  int64_t limit = 0;   // use only the first `limit` samples (0 = all; the YAML asks for >= 1 or no key)
  bool allow_non_finite = false;  // NaN/Inf feature values are an error unless this is set
  SourcePos pos;
};

struct DataSpec {
  DataSourceSpec train, test;
  std::vector<data::Transform> transforms;        // train and test
  std::vector<data::Transform> train_transforms;  // train only (augmentation), after `transforms`
};

struct TrainSpec {
  int64_t batch_size = 64;
  int64_t epochs = 1;
  uint64_t seed = 0;
  train::OptimizerConfig optimizer;
  train::ScheduleConfig schedule;   // base_lr from optimizer.lr; total_steps filled by the trainer
  std::string schedule_kind = "constant";
  double clip_grad_norm = 0;        // 0 = off
  int64_t log_every = 100;
  int threads = 0;                  // 0 = leave the library default
  std::string device = "cpu";       // where pd-train runs: cpu, cuda, cuda:N (--device overrides)
  bool check_nan_inf = false;       // check every op's outputs for NaN/Inf (--check-nan-inf)
  int64_t checkpoint_every = 0;     // also checkpoint every N steps within an epoch (0 = per epoch only)
  double bucket_mb = 25;            // pd-dist: gradients are averaged in buckets of about this size
  bool shard_optimizer_state = false;  // pd-dist: `sharding: optimizer_state` (ZeRO stage 1)
  bool sync_batch_norm = false;     // pd-dist: batch_norm statistics over the global batch
  std::string amp_dtype;            // `amp: {dtype, level}`: bf16 or f16 mixed precision; empty = off
  std::string amp_level = "O1";     // O1 (the listed ops in low precision) or O2 (all but the f32 list)
  bool deterministic = false;       // GPU algorithms chosen so that two runs give identical weights
};

struct ModelSpec {
  std::string file;
  std::string name;
  std::string yaml_text;  // the file as read, stored in model files
  std::vector<InputSpec> inputs;
  std::vector<LayerSpec> layers;
  std::string loss_type = "cross_entropy";
  std::string loss_input;  // a layer name (logits)
  std::string label_input; // an input name
  AttrMap loss_attrs;
  DataSpec data;
  TrainSpec train;
  bool has_data = false, has_train = false;
};

ModelSpec load_model_yaml(const std::string& path);
ModelSpec parse_model_yaml(const std::string& text, const std::string& file);
// Hash of what a checkpoint must agree with to be resumed (inputs, network, loss, optimizer, schedule).
uint64_t spec_hash(const ModelSpec& spec);

class Layer;

// Sums `n` values over the ranks of a data-parallel job, in place; `what` names them in errors. The
// trainer passes one to the network for sync_batch_norm.
using CrossRankSum = std::function<void(double* values, size_t n, const std::string& what)>;

struct ParamInfo {
  std::string name;  // "conv1.weight"
  Tensor value;
  bool trainable = true;  // false for buffers (batch_norm running statistics)
};

class Network {
 public:
  // Builds the layers, infers every shape with a probe batch, and initialises parameters from `seed`
  // (PyTorch's default scheme: uniform(+-1/sqrt(fan_in))).
  explicit Network(const ModelSpec& spec);
  ~Network();

  // Runs the DAG; returns the value of every input and layer by name. `step` seeds dropout. With `keep`
  // set, only those values are returned and every other one is let go after its last reader ran, so
  // that a forward pass without gradients holds a few activations at a time, not all of them.
  std::map<std::string, Tensor> forward(const std::map<std::string, Tensor>& inputs, bool training, int64_t step,
                                        const std::set<std::string>& keep = {});
  Tensor loss(const std::map<std::string, Tensor>& values, const Tensor& labels) const;
  const std::string& output_name() const { return spec_.loss_input; }

  std::vector<ParamInfo>& params() { return params_; }
  std::vector<train::NamedParam> trainable() const;
  std::map<std::string, Tensor> state() const;  // every parameter and buffer by name
  void load_state(const std::map<std::string, Tensor>& state, bool allow_missing = false);
  // Moves every parameter and buffer to `place` (the tensors keep their identity: layers and an
  // optimizer made afterwards see them there). Inputs passed to forward must be on it too.
  void to(Place place);
  Place place() const { return place_; }
  // Data parallel: each rank passes its rank, so that ranks draw different dropout masks (0 = the
  // single-process stream).
  void set_rng_stream(uint64_t stream) { rng_stream_ = stream; }
  // Data parallel with train.sync_batch_norm: batch_norm layers in training take their statistics over
  // every rank's share of the batch through `sum`, in forward and backward alike.
  void set_cross_rank_sum(CrossRankSum sum) { cross_rank_sum_ = std::move(sum); }

  // One row per layer: name, type, output shape (with the batch axis as -1... shown as N), parameter count.
  struct Row {
    std::string name, type, output_shape;
    int64_t params;
  };
  std::vector<Row> summary() const;
  int64_t parameter_count() const;
  const ModelSpec& spec() const { return spec_; }

 private:
  ModelSpec spec_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::map<std::string, size_t> last_reader_;  // value name -> index of the last layer that reads it
  // How layer i runs together with layer i + 1, the only reader of its value, when that value is not
  // asked for: fuse_relu, layer i + 1 is a relu that layer i applies itself (Layer::forward_relu:
  // batch_norm); pool_then_relu, layer i is a relu and layer i + 1 a max_pool2d, which commute (relu
  // is monotonic), so the relu runs on the pooled map, a quarter of the size for 2x2 windows, with the
  // same values and gradients; add_relu, layer i + 1 is a two-input add of the same shapes and layer
  // i + 2 a relu that alone reads the sum, which layer i applies with the add's other input
  // (Layer::forward_add_relu: batch_norm, the tail of a residual block).
  enum class Pairing : uint8_t { none, fuse_relu, pool_then_relu, add_relu };
  std::vector<Pairing> pairing_;
  // Layers that run on [N, H, W, C] values when forward() is given a keep set (as pd-train's steps do)
  // on the CPU: chains of conv2d / batch_norm / activation / add starting at a convolution, in a
  // network with convolutions wide enough for oneDNN (channels_last_plan in network.cc). Their values
  // are held in NHWC and transposed where a layer outside the chain reads them, so that the
  // convolutions read and write their own layout with no reorders.
  std::vector<bool> channels_last_;
  std::vector<ParamInfo> params_;
  Place place_ = Place::cpu();
  uint64_t rng_stream_ = 0;
  CrossRankSum cross_rank_sum_;
  std::vector<Row> rows_;
};

}  // namespace pd::model
