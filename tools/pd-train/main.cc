// pd-train MODEL.yaml: train a network described in a model YAML on its data and write a model file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "check.h"
#include "common/cli_checks.h"
#include "common/openmp_spin.h"
#include "common/tool_main.h"
#include "pd/train/trainer.h"

int main(int argc, char** argv) {
  pd::tools::bound_openmp_spin(argv);
  CLI::App app{"pd-train: train a network described in a model YAML (docs/model-yaml.md)", "pd-train"};
  std::string yaml;
  pd::train::TrainOptions opt;
  bool check = false;
  app.add_option("model", yaml, "the model YAML")->required();
  app.add_flag("--check", check, "validate the YAML and print the per-layer shapes and parameter counts, then exit");
  app.add_option("--out", opt.out_dir, "the run directory (default runs/NAME, or runs/NAME-2, -3... when that holds a run)");
  app.add_flag("--resume", opt.resume, "continue the run in --out (default runs/NAME) from its checkpoint");
  app.add_flag("--overwrite", opt.overwrite, "replace the run in --out (without it, a directory holding a run is refused)");
  app.add_flag("--check-nan-inf", opt.check_nan_inf, "check every op's outputs for NaN/Inf and stop at the first op that makes one");
  app.add_option("--init-from", opt.init_from, "fine-tune: start from the parameters of this model file");
  app.add_option("--epochs", opt.epochs, "override train.epochs")->check(pd::tools::integer_in<int64_t>(1, 1000000, "an epoch count from 1 to 1000000"));
  app.add_option("--stop-after-epoch", opt.stop_after_epoch, "checkpoint and stop after this epoch")->check(pd::tools::positive<int64_t>());
  app.add_option("--limit", opt.limit, "use only the first N training and test samples")->check(pd::tools::positive<int64_t>());
  app.add_option("--threads", opt.threads, "CPU threads for the kernels")->check(pd::tools::integer_in<int>(1, 4096, "a thread count from 1 to 4096"));
  app.add_option("--device", opt.device, "where to train: cpu, cuda or cuda:N (default: train.device in the YAML, else cpu)");
  app.add_flag("--quiet,-q", opt.quiet, "no progress or per-epoch text (errors only)");
  app.add_flag("--json", opt.json, "print one JSON object per epoch on stdout");
  app.add_flag("--profile", opt.profile,
               "after each epoch, print where a training step's time went: data, forward, backward, optimizer, other; "
               "the ops with the most time; allocations served from the cache");
  return pd::tools::run_tool("pd-train", app, argc, argv, [&]() -> int {
    pd::model::ModelSpec spec = pd::model::load_model_yaml(yaml);
    if (check) {
      pd::model::Network net(spec);
      pd::tools::print_layer_table(spec, net);
      return 0;
    }
    return pd::train::Trainer(std::move(spec), opt).run();
  });
}
