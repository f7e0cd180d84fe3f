#include "pd/train/trainer.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/allocator.h"
#include "pd/data/readers.h"
#include "pd/io/model_file.h"
#include "pd/io/tensor_file.h"
#include "pd/core/threads.h"
#include "pd/model/export.h"
#include "pd/train/optimizer.h"
#include "run_files.h"

namespace pd::train {
namespace {

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal = sig; }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string fmt_duration(double s) {
  int64_t t = static_cast<int64_t>(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

// Loads one data source and shapes its features as the network's feature input expects.
data::Dataset load_source(const model::DataSourceSpec& src, const model::InputSpec& input, int64_t limit) {
  data::Dataset d;
  if (src.format == "csv") {
    data::CsvTable t = data::read_csv(src.features, src.label_column, src.header);
    d = {t.features, t.labels};
  } else {
    d.features = src.format == "idx" ? data::read_idx(src.features) : data::read_npy(src.features);
    d.labels = src.format == "idx" ? data::read_idx(src.labels) : data::read_npy(src.labels);
  }
  const int64_t n = d.features.dim() > 0 ? d.features.shape()[0] : 0;
  PD_CHECK(d.labels.dim() == 1 && d.labels.shape()[0] == n, ErrorCode::kShape,
           "{}: {} has {} samples but the labels {} have shape {}", src.pos.str(), src.features, n, src.labels,
           shape_str(d.labels.shape()));
  PD_CHECK(is_integral(d.labels.dtype()), ErrorCode::kDType, "{}: labels in {} must be integers, but are {}", src.pos.str(),
           src.labels, dtype_name(d.labels.dtype()));
  const int64_t per_sample = n > 0 ? d.features.numel() / n : 0;
  PD_CHECK(per_sample == shape_numel(input.shape), ErrorCode::kShape,
           "{}: samples in {} have {} values (shape {} per sample), but input '{}' expects {} ({} values)", src.pos.str(),
           src.features, per_sample, shape_str(Shape(d.features.shape().begin() + 1, d.features.shape().end())), input.name,
           shape_str(input.shape), shape_numel(input.shape));
  if (limit > 0 && limit < n) {
    d.features = ops::slice(d.features, {0}, {0}, {limit}).contiguous();
    d.labels = ops::slice(d.labels, {0}, {0}, {limit}).contiguous();
  }
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

struct EvalResult {
  double loss = 0, acc = 0;
};

EvalResult evaluate(model::Network& net, data::DataLoader& loader, const std::string& feature, int64_t step) {
  NoGradGuard no_grad;
  loader.start_epoch(0);
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  while (auto b = loader.next()) {
    const Tensor y = b->y.to(net.place());
    auto values = net.forward({{feature, b->x.to(net.place())}}, false, step);
    const int64_t n = y.numel();
    loss_sum += net.loss(values, y).item<double>() * static_cast<double>(n);
    Tensor pred = ops::argmax(values.at(net.output_name()), -1);
    correct += ops::sum(ops::cast(ops::equal(pred, y), DType::i64)).item<int64_t>();
    seen += n;
  }
  return {seen ? loss_sum / seen : 0, seen ? static_cast<double>(correct) / seen : 0};
}

struct Cursor {
  int64_t epoch = 0, batch = 0, step = 0;
};

void save_checkpoint(const std::string& path, model::Network& net, const Optimizer& opt, const Cursor& c, uint64_t hash) {
  std::map<std::string, Tensor> t;
  for (const auto& [k, v] : net.state()) t["param/" + k] = v;
  for (const auto& [k, v] : opt.state()) t["optim/" + k] = v;
  io::save_tensors(path, t,
                   {{"kind", "paddle-cpp checkpoint"}, {"epoch", std::to_string(c.epoch)}, {"batch", std::to_string(c.batch)},
                    {"step", std::to_string(c.step)}, {"spec_hash", std::to_string(hash)}, {"model_yaml", net.spec().yaml_text}});
}

Cursor load_checkpoint(const std::string& path, model::Network& net, Optimizer& opt, uint64_t hash) {
  io::TensorArchive a = io::load_tensors(path);
  PD_CHECK(a.metadata["kind"] == "paddle-cpp checkpoint", ErrorCode::kParse, "{}: not a pd-train checkpoint", path);
  PD_CHECK(a.metadata["spec_hash"] == std::to_string(hash), ErrorCode::kInvalidArgument,
           "{}: the checkpoint was written for a different model, optimizer or schedule than {}; resume with the YAML it was "
           "trained with (stored in the run directory as config.yaml), or start a new run with --init-from to fine-tune",
           path, net.spec().file);
  std::map<std::string, Tensor> params, optim;
  for (auto& [k, v] : a.tensors) {
    if (k.rfind("param/", 0) == 0) params[k.substr(6)] = v;
    if (k.rfind("optim/", 0) == 0) optim[k.substr(6)] = v;
  }
  net.load_state(params);
  opt.load_state(optim);
  return {std::stoll(a.metadata["epoch"]), std::stoll(a.metadata["batch"]), std::stoll(a.metadata["step"])};
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

}  // namespace

void save_model(const std::string& path, model::Network& net, const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> meta = extra;
  meta["kind"] = "paddle-cpp model";
  meta["name"] = net.spec().name;
  meta["model_yaml"] = net.spec().yaml_text;
  io::save_tensors(path, net.state(), meta);
}

LoadedModel load_model(const std::string& path) {
  io::TensorArchive a = io::load_tensors(path);
  PD_CHECK(a.metadata["kind"] == "paddle-cpp model", ErrorCode::kParse,
           "{}: not a paddle-cpp model file (kind '{}'); pd-train writes model.pdparams in its run directory", path,
           a.metadata["kind"]);
  LoadedModel m;
  m.spec = model::parse_model_yaml(a.metadata["model_yaml"], path + " (embedded model YAML)");
  m.net = std::make_unique<model::Network>(m.spec);
  m.net->load_state(a.tensors);
  return m;
}

Trainer::Trainer(model::ModelSpec spec, TrainOptions options) : spec_(std::move(spec)), opt_(std::move(options)) {}

int Trainer::run() {
  namespace fs = std::filesystem;
  PD_CHECK(spec_.has_data, ErrorCode::kInvalidArgument, "{}: no 'data' section, so there is nothing to train on", spec_.file);
  if (opt_.epochs > 0) spec_.train.epochs = opt_.epochs;
  pd::set_num_threads(opt_.threads > 0 ? opt_.threads : spec_.train.threads);
  const bool tty = !opt_.quiet && isatty(STDERR_FILENO);
  fs::create_directories(opt_.out_dir);
  const std::string ckpt = opt_.out_dir + "/checkpoint.pdckpt", metrics_path = opt_.out_dir + "/metrics.jsonl";

  const Place device = parse_place(opt_.device.empty() ? spec_.train.device : opt_.device);
  model::Network net(spec_);
  net.to(device);  // before the optimizer, whose state is made beside the parameters
  const model::InputSpec& feat = feature_input(spec_);
  data::DataLoader train_loader(load_source(spec_.data.train, feat, opt_.limit),
                                {.batch_size = spec_.train.batch_size, .shuffle = true, .seed = spec_.train.seed},
                                [&] {
                                  auto t = spec_.data.transforms;
                                  t.insert(t.end(), spec_.data.train_transforms.begin(), spec_.data.train_transforms.end());
                                  return t;
                                }());
  data::DataLoader test_loader(load_source(spec_.data.test, feat, opt_.limit), {.batch_size = 500, .shuffle = false},
                               spec_.data.transforms);
  const int64_t per_epoch = train_loader.batches_per_epoch();
  ScheduleConfig sched_cfg = spec_.train.schedule;
  if (sched_cfg.total_steps == 0) sched_cfg.total_steps = std::max<int64_t>(1, per_epoch * spec_.train.epochs);
  LrSchedule sched(sched_cfg);
  Optimizer optim(net.trainable(), spec_.train.optimizer);
  const uint64_t hash = model::spec_hash(spec_);

  Cursor cur;
  if (opt_.resume) {
    PD_CHECK(fs::exists(ckpt), ErrorCode::kIO, "{}: no checkpoint to resume from", ckpt);
    cur = load_checkpoint(ckpt, net, optim, hash);
    if (!opt_.quiet) fmt::print(stderr, "resuming {} at epoch {}, batch {} (step {})\n", opt_.out_dir, cur.epoch + 1, cur.batch, cur.step);
  } else {
    if (!opt_.init_from.empty()) net.load_state(load_model(opt_.init_from).net->state(), true);
    std::ofstream(metrics_path, std::ios::trunc);
    io::write_file_atomic(opt_.out_dir + "/config.yaml", spec_.yaml_text);
  }
  if (!opt_.quiet && !opt_.resume)
    fmt::print(stderr, "{}: {} parameters, {} training samples, {} steps per epoch, on {}\n", spec_.name,
               net.parameter_count(), train_loader.dataset().size(), per_epoch, device.str());

  g_signal = 0;
  auto prev_int = std::signal(SIGINT, on_signal);
  auto prev_term = std::signal(SIGTERM, on_signal);
  struct Restore {
    decltype(prev_int) a, b;
    ~Restore() {
      std::signal(SIGINT, a);
      std::signal(SIGTERM, b);
    }
  } restore{prev_int, prev_term};

  std::vector<EpochMetrics> history = read_metrics(metrics_path);
  const std::string feature = feat.name;
  for (; cur.epoch < spec_.train.epochs; ++cur.epoch, cur.batch = 0) {
    train_loader.start_epoch(cur.epoch, cur.batch);
    const auto t0 = Clock::now();
    double loss_sum = 0, lr = 0;
    int64_t samples = 0, steps = 0;
    while (auto b = train_loader.next()) {
      lr = sched.lr(cur.step);
      auto values = net.forward({{feature, b->x.to(device)}}, true, cur.step);
      Tensor loss = net.loss(values, b->y.to(device));
      backward(loss);
      if (spec_.train.clip_grad_norm > 0) clip_grad_norm(optim.params(), spec_.train.clip_grad_norm);
      optim.step(lr);
      loss_sum += loss.item<double>() * static_cast<double>(b->y.numel());
      samples += b->y.numel();
      ++steps;
      ++cur.step;
      cur.batch = b->index + 1;
      if (tty && (cur.batch % spec_.train.log_every == 0 || cur.batch == per_epoch)) {
        double el = seconds_since(t0), rate = samples / std::max(el, 1e-9);
        double remaining = (per_epoch - cur.batch) * spec_.train.batch_size / std::max(rate, 1e-9);
        fmt::print(stderr, "\repoch {}/{} step {}/{} loss {:.4f} lr {:.3g} {:.0f} samples/s ETA {}   ", cur.epoch + 1,
                   spec_.train.epochs, cur.batch, per_epoch, loss_sum / samples, lr, rate, fmt_duration(remaining));
      }
      if (g_signal != 0) {
        save_checkpoint(ckpt, net, optim, cur, hash);
        fmt::print(stderr, "\n{}: interrupted; checkpoint saved at epoch {} batch {}. Resume with: pd-train {} --out {} --resume\n",
                   spec_.name, cur.epoch + 1, cur.batch, spec_.file, opt_.out_dir);
        return 130;
      }
    }
    const double train_seconds = seconds_since(t0);
    if (tty) fmt::print(stderr, "\r\033[K");
    EvalResult ev = evaluate(net, test_loader, feature, cur.step);
    EpochMetrics m{cur.epoch + 1, samples ? loss_sum / samples : 0, ev.loss, ev.acc, samples / std::max(train_seconds, 1e-9),
                   seconds_since(t0), lr, cur.step};
    history.push_back(m);
    {
      std::ofstream out(metrics_path, std::ios::app);
      out << metrics_json(m) << "\n";
    }
    io::write_file_atomic(opt_.out_dir + "/plot.svg", metrics_svg(history, spec_.name));
    Cursor next{cur.epoch + 1, 0, cur.step};
    save_checkpoint(ckpt, net, optim, next, hash);
    if (opt_.json) fmt::print("{}\n", metrics_json(m));
    else if (!opt_.quiet)
      fmt::print(stderr, "epoch {}/{}: train_loss {:.4f} test_loss {:.4f} test_acc {:.4f} ({:.0f} samples/s, {:.1f} s, peak RSS {:.0f} MiB)\n",
                 m.epoch, spec_.train.epochs, m.train_loss, m.test_loss, m.test_acc, m.samples_per_s, m.seconds, peak_rss_mib());
    std::fflush(stdout);
    if (opt_.stop_after_epoch > 0 && cur.epoch + 1 >= opt_.stop_after_epoch && cur.epoch + 1 < spec_.train.epochs) {
      if (!opt_.quiet) fmt::print(stderr, "stopping after epoch {} as asked; resume with --resume\n", cur.epoch + 1);
      return 0;
    }
  }
  const double acc = history.empty() ? 0 : history.back().test_acc;
  net.to(Place::cpu());  // model files hold host tensors; export traces the network on the CPU
  save_model(opt_.out_dir + "/model.pdparams", net, {{"test_acc", fmt::format("{:.5f}", acc)}});
  // The same model as a static program for pd-infer (model.pdmodel + model.pdiparams).
  io::save_program(opt_.out_dir + "/model.pdmodel", model::to_program(net),
                   {{"name", spec_.name}, {"test_acc", fmt::format("{:.5f}", acc)}, {"model_yaml", spec_.yaml_text}});
  if (!opt_.quiet) fmt::print(stderr, "model written to {0}/model.pdparams and {0}/model.pdmodel\n", opt_.out_dir);
  return 0;
}

}  // namespace pd::train
