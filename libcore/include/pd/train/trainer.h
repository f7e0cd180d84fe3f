// The training loop behind pd-train: data, forward, loss, backward, clipping, optimizer step, eval
// each epoch, a run directory (metrics.jsonl, plot.svg, config, model, checkpoint), and checkpoints
// that resume bit-identically.
//
//   pd::train::Trainer trainer(pd::model::load_model_yaml("examples/lenet_fmnist.yaml"), {.out_dir = "runs/lenet"});
//   int code = trainer.run();
#pragma once
#include <string>

#include "pd/model/network.h"

namespace pd::train {

struct TrainOptions {
  std::string out_dir;        // the run directory (created); "" = runs/NAME, or runs/NAME-2... when used
  bool resume = false;        // continue from out_dir/checkpoint.pdckpt
  bool overwrite = false;     // replace the run in out_dir (without it, a used directory is refused)
  bool check_nan_inf = false; // check every op's outputs for NaN/Inf (also train.check_nan_inf)
  std::string init_from;      // fine-tune: load parameters from a model file first
  int64_t epochs = 0;         // override the YAML (0 = keep)
  int64_t stop_after_epoch = 0;  // checkpoint and stop after this epoch (0 = run to the end)
  int64_t limit = 0;          // use only the first N training and test samples (0 = all)
  int threads = 0;            // 0 = YAML or library default
  bool quiet = false;         // no progress line, no per-epoch text
  bool json = false;          // one JSON object per epoch on stdout
  std::string device;         // "" = the YAML's train.device (default cpu); cpu, cuda, cuda:N
  bool profile = false;       // print where each epoch's step time went (phases, ops, allocator)
};

// Exit codes: 0 finished (or stopped as asked, or nothing left to do), 130 interrupted by SIGINT/SIGTERM
// after a checkpoint. A NaN/Inf loss stops the run with a pd::Error before the weights take the step.
class Trainer {
 public:
  Trainer(model::ModelSpec spec, TrainOptions options);
  int run();

 private:
  model::ModelSpec spec_;
  TrainOptions opt_;
};

// Model files written by pd-train: parameters plus the model YAML they belong to.
void save_model(const std::string& path, model::Network& net, const std::map<std::string, std::string>& extra = {});
struct LoadedModel {
  model::ModelSpec spec;
  std::unique_ptr<model::Network> net;
};
LoadedModel load_model(const std::string& path);

}  // namespace pd::train
