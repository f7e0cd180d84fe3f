#include "pd/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <optional>
#include <thread>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/allocator.h"
#include "pd/core/determinism.h"
#include "pd/dist/data_parallel.h"
#include "pd/dist/optimizer_shards.h"
#include "pd/io/model_file.h"
#include "pd/io/tensor_file.h"
#include "pd/core/threads.h"
#include "pd/model/export.h"
#include "pd/ops/amp.h"
#include "pd/train/loss_scaler.h"
#include "pd/train/optimizer.h"
#include "checkpoint.h"
#include "non_finite_check.h"
#include "run_dir.h"
#include "run_files.h"
#include "step_profile.h"
#include "training_data.h"

namespace pd::train {
namespace fs = std::filesystem;
namespace {

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal = sig; }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string fmt_duration(double s) {
  int64_t t = static_cast<int64_t>(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

struct EvalResult {
  double loss = 0, acc = 0;
};

// Loss and accuracy over the test set; with data parallel each rank evaluates its shard and the sums
// are added up over ranks.
EvalResult evaluate(model::Network& net, data::DataLoader& loader, const std::string& feature, int64_t step,
                    dist::DataParallel* dp) {
  NoGradGuard no_grad;
  loader.start_epoch(0);
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  while (auto b = loader.next()) {
    if (b->y.numel() == 0) continue;  // a rank's empty share of a short last batch
    const Tensor y = b->y.to(net.place());
    auto values = net.forward({{feature, b->x.to(net.place())}}, false, step, {net.output_name()});
    const int64_t n = y.numel();
    loss_sum += net.loss(values, y).item<double>() * static_cast<double>(n);
    Tensor pred = ops::argmax(values.at(net.output_name()), -1);
    correct += ops::sum(ops::cast(ops::equal(pred, y), DType::i64)).item<int64_t>();
    seen += n;
  }
  std::vector<double> sums{loss_sum, static_cast<double>(correct), static_cast<double>(seen)};
  if (dp) dp->sum(sums, "evaluation sums");
  return {sums[2] > 0 ? sums[0] / sums[2] : 0, sums[2] > 0 ? sums[1] / sums[2] : 0};
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

namespace {

// Fine-tuning: parameters matched by name, shape and dtype; the rest keep their initialisation. A file
// that matches nothing is refused: training from scratch by accident is the silent failure here.
void init_from_model(model::Network& net, const std::string& path, bool quiet) {
  const std::map<std::string, Tensor> src = load_model(path).net->state();
  std::map<std::string, Tensor> matched;
  std::vector<std::string> other_shape, missing;
  for (const auto& [name, value] : net.state()) {
    auto it = src.find(name);
    if (it == src.end()) {
      missing.push_back(name);
    } else if (it->second.shape() != value.shape() || it->second.dtype() != value.dtype()) {
      other_shape.push_back(fmt::format("{} ({} in the file, {} here)", name, shape_str(it->second.shape()), shape_str(value.shape())));
    } else {
      matched[name] = it->second;
    }
  }
  PD_CHECK(!matched.empty(), ErrorCode::kInvalidArgument,
           "--init-from {}: none of its {} parameters matches this model's {} by name and shape, so nothing would be "
           "loaded; is it a model of another network?",
           path, src.size(), net.state().size());
  net.load_state(matched, true);
  const size_t unused = src.size() - matched.size() - other_shape.size();
  if (!quiet)
    fmt::print(stderr, "--init-from {}: loaded {} parameters; {} with another shape skipped{}{}; {} not in the file (initialised); {} of the file's unused\n",
               path, matched.size(), other_shape.size(), other_shape.empty() ? "" : ": ", fmt::join(other_shape, ", "),
               missing.size(), unused);
}

// A finished run's model files, present and readable: then there is nothing left to do.
bool model_files_ok(const RunDir& dir) {
  try {
    load_model(dir.file("model.pdparams"));
    io::load_program(dir.file("model.pdmodel"));
    return true;
  } catch (const Error&) {
    return false;
  }
}

void write_metrics(const RunDir& dir, const std::vector<EpochMetrics>& history, const std::string& title) {
  std::string lines;
  for (const auto& m : history) lines += metrics_json(m) + "\n";
  io::write_file_atomic(dir.file("metrics.jsonl"), lines);
  io::write_file_atomic(dir.file("plot.svg"), metrics_svg(history, title));
}

}  // namespace

int Trainer::run() {
  PD_CHECK(spec_.has_data, ErrorCode::kInvalidArgument, "{}: no 'data' section, so there is nothing to train on", spec_.file);
  PD_CHECK(!(opt_.resume && opt_.overwrite), ErrorCode::kInvalidArgument,
           "--resume continues the run in --out and --overwrite replaces it: pass one of them");
  PD_CHECK(!(opt_.resume && !opt_.init_from.empty()), ErrorCode::kInvalidArgument,
           "--init-from starts a new run from a model's parameters; --resume continues from the run's checkpoint: pass one of them");
  // Started by pd-dist: meet the other ranks first. Rank 0 owns the run directory and decides where
  // the run starts; the others receive its state and write nothing.
  std::unique_ptr<dist::DataParallel> dp;
  if (auto env = dist::DistEnv::from_environment()) dp = std::make_unique<dist::DataParallel>(*env);
  const int rank = dp ? dp->rank() : 0, world = dp ? dp->world() : 1;
  const bool lead = rank == 0;
  if (dp && dp->env().restart > 0) {
    // A restarted job continues the run its first start made.
    if (auto path = dp->store().try_get("job/run_dir"); path && opt_.out_dir.empty()) opt_.out_dir.assign(path->begin(), path->end());
    opt_.resume = true;
    opt_.overwrite = false;
    opt_.init_from.clear();
  }
  if (!lead) opt_.quiet = true, opt_.json = false;
  // Claimed first, so that a used directory is refused before any work; a failure before commit()
  // removes a directory this start created.
  std::optional<RunDir> dir;
  if (lead)
    dir.emplace(RunDir::claim(opt_.out_dir, spec_.name,
                              opt_.resume ? RunDir::Mode::resume : opt_.overwrite ? RunDir::Mode::overwrite : RunDir::Mode::fresh));
  if (opt_.epochs > 0) spec_.train.epochs = opt_.epochs;
  if (opt_.check_nan_inf) spec_.train.check_nan_inf = true;
  pd::set_num_threads(opt_.threads > 0 ? opt_.threads : spec_.train.threads);
  const bool tty = !opt_.quiet && isatty(STDERR_FILENO);
  const std::string ckpt = lead ? dir->file("checkpoint.pdckpt") : "";

  std::string device_name = opt_.device.empty() ? spec_.train.device : opt_.device;
  if (dp && device_name == "cuda") device_name = fmt::format("cuda:{}", dp->env().local_rank);  // a GPU per local rank
  const Place device = parse_place(device_name);
  pd::set_deterministic(spec_.train.deterministic);
  const bool amp_on = !spec_.train.amp_dtype.empty();
  PD_CHECK(!amp_on || !device.is_cpu(), ErrorCode::kInvalidArgument,
           "{}: train.amp ({} {}) runs on a GPU (--device cuda): the CPU kernels have no bf16 / f16 products; remove "
           "amp: to train on the CPU",
           spec_.file, spec_.train.amp_dtype, spec_.train.amp_level);
  const amp::Policy amp_policy = amp_on ? amp::parse_policy(spec_.train.amp_dtype, spec_.train.amp_level) : amp::Policy{};
  LossScaler scaler(amp_on && amp_policy.dtype == DType::f16);
  model::Network net(spec_);
  net.to(device);  // before the optimizer, whose state is made beside the parameters
  net.set_rng_stream(static_cast<uint64_t>(rank));
  // sync_batch_norm's sums run in backward beside the reducer's allreduces: a group of their own.
  std::unique_ptr<dist::ProcessGroup> stats_group;
  if (dp && spec_.train.sync_batch_norm) {
    stats_group = dp->make_group("sync_batch_norm");
    net.set_cross_rank_sum([g = stats_group.get()](double* v, size_t n, const std::string& what) { g->allreduce_sum(v, n, what); });
  }
  const model::InputSpec& feat = feature_input(spec_);
  // A prefetch thread only pays with a core of its own: with every core running the kernels' threads
  // it takes turns with them, and OpenMP's barriers wait for whichever thread is descheduled. The data
  // is in memory, so building a batch in the step costs little (0.03 ms for the MLP's 64 samples).
  const int prefetch = std::thread::hardware_concurrency() > static_cast<unsigned>(pd::num_threads()) ? 2 : 0;
  // With N ranks, batch_size stays the global batch: each rank takes its share of every batch.
  data::DataLoader train_loader(load_source(spec_.data.train, feat, opt_.limit),
                                {.batch_size = spec_.train.batch_size,
                                 .shuffle = true,
                                 .seed = spec_.train.seed,
                                 .prefetch = prefetch,
                                 .shard = rank,
                                 .shards = world},
                                [&] {
                                  auto t = spec_.data.transforms;
                                  t.insert(t.end(), spec_.data.train_transforms.begin(), spec_.data.train_transforms.end());
                                  return t;
                                }());
  // Evaluation takes training's batch size: its values then fit the blocks a step left in the
  // allocator's cache, and it never holds more than a step (at 500 samples it was the residual
  // example's peak RSS).
  data::DataLoader test_loader(load_source(spec_.data.test, feat, opt_.limit),
                               {.batch_size = spec_.train.batch_size, .shuffle = false, .shard = rank, .shards = world},
                               spec_.data.transforms);
  const int64_t per_epoch = train_loader.batches_per_epoch();
  ScheduleConfig sched_cfg = spec_.train.schedule;
  if (sched_cfg.total_steps == 0) sched_cfg.total_steps = std::max<int64_t>(1, per_epoch * spec_.train.epochs);
  // Sharding stage 1: each rank keeps the optimizer state of its share of the parameters.
  std::unique_ptr<dist::OptimizerShards> shards;
  if (dp && spec_.train.shard_optimizer_state) shards = std::make_unique<dist::OptimizerShards>(dp->group(), net.trainable());
  Optimizer optim(net.trainable(), spec_.train.optimizer, shards ? shards->owned() : std::vector<bool>{});
  const uint64_t hash = model::spec_hash(spec_);
  const RunFacts facts_now{train_loader.dataset().size(), per_epoch, spec_.train.epochs, sched_cfg.total_steps};

  RunState st;
  std::vector<EpochMetrics> history;
  bool resuming = false, finished = false;
  std::map<std::string, Tensor> resumed_optim_state;  // the whole state as read, for the other ranks
  if (lead) {
    resuming = opt_.resume && fs::exists(ckpt);
    if (resuming) {
      Checkpoint c = load_checkpoint(ckpt, net, &optim, hash);
      st = c.state;
      scaler.load_state(c.metadata, ckpt);
      if (dp) resumed_optim_state = std::move(c.optim_state);
      const RunFacts& was = c.facts;
      PD_CHECK(was.train_samples < 0 || (was.train_samples == facts_now.train_samples && was.batches_per_epoch == per_epoch),
               ErrorCode::kInvalidArgument,
               "{}: the run trained on {} samples per epoch ({} batches), but this start has {} ({} batches): resume with the "
               "same data and --limit, or start a new run",
               ckpt, was.train_samples, was.batches_per_epoch, facts_now.train_samples, per_epoch);
      PD_CHECK(st.epoch <= spec_.train.epochs, ErrorCode::kInvalidArgument,
               "{}: the run has already trained {} epochs, more than the {} asked for; pass --epochs {} or more to continue it",
               ckpt, st.epoch, spec_.train.epochs, st.epoch + 1);
      // A schedule laid out over the run's length changes with it: say so, with what it does to the lr.
      if (was.schedule_steps > 0 && was.schedule_steps != sched_cfg.total_steps && sched_cfg.kind == ScheduleKind::Cosine &&
          !opt_.quiet) {
        ScheduleConfig old_cfg = sched_cfg;
        old_cfg.total_steps = was.schedule_steps;
        fmt::print(stderr,
                   "note: the cosine schedule is stretched from {} steps ({} epochs) to {} ({} epochs); at step {} the learning "
                   "rate goes from {:.3g} on the old curve to {:.3g} on the new one\n",
                   was.schedule_steps, was.epochs, sched_cfg.total_steps, spec_.train.epochs, st.step,
                   LrSchedule(old_cfg).lr(st.step), LrSchedule(sched_cfg).lr(st.step));
      }
      for (const auto& m : read_metrics(dir->file("metrics.jsonl")))
        if (m.epoch <= st.epoch) history.push_back(m);  // lines past the checkpoint are redone
      dir->remove_stale_temporaries();
      finished = st.epoch == spec_.train.epochs && model_files_ok(*dir);
      if (finished && !opt_.quiet)
        fmt::print(stderr, "{}: the run has already finished its {} epochs; nothing to do (pass --epochs N to train longer)\n",
                   dir->path(), st.epoch);
      else if (!opt_.quiet)
        fmt::print(stderr, "resuming {} at epoch {}, batch {} (step {})\n", dir->path(), st.epoch + 1, st.batch, st.step);
    } else {
      if (opt_.resume && !opt_.quiet)
        fmt::print(stderr, "note: {} has no checkpoint yet; starting the run from the beginning\n", dir->path());
      if (opt_.overwrite) dir->remove_run_files();
      if (!opt_.init_from.empty()) init_from_model(net, opt_.init_from, opt_.quiet);
    }
  }
  if (dp) {
    // Every rank starts from rank 0's weights, optimizer state and place in the run.
    // A new run's optimizer state is zero on every rank; a resumed one's is the checkpoint's, whole.
    std::map<std::string, std::string> extra = scaler.state();
    extra.merge(std::map<std::string, std::string>{{"finished", finished ? "1" : "0"}, {"resuming", resuming ? "1" : "0"}});
    const std::string state = lead ? encode_checkpoint(net, resuming ? resumed_optim_state : std::map<std::string, Tensor>{}, st,
                                                       facts_now, hash, extra)
                                   : std::string();
    resumed_optim_state.clear();
    const std::string got = dp->broadcast_bytes(state, "initial state from rank 0");
    if (!lead) {
      const Checkpoint c = restore_checkpoint(got, "the state rank 0 sent", net, nullptr, hash);
      st = c.state;
      finished = c.metadata.at("finished") == "1";
      resuming = c.metadata.at("resuming") == "1";
      scaler.load_state(c.metadata, "the state rank 0 sent");
      if (resuming) optim.load_state(c.optim_state);
    }
  }
  if (finished) {
    if (lead) dir->commit();
    return 0;
  }
  LrSchedule sched(sched_cfg);
  RunFacts facts = facts_now;
  facts.schedule_steps = sched_cfg.total_steps;
  if (lead) {
    dir->remove_stale_temporaries();
    dir->commit();
    if (dp) dp->store().set("job/run_dir", dir->path());
    if (!resuming) io::write_file_atomic(dir->file("config.yaml"), spec_.yaml_text);
    write_metrics(*dir, history, spec_.name);
  }
  if (!opt_.quiet && !resuming)
    fmt::print(stderr, "{}: {} parameters, {} training samples, {} steps per epoch, on {}{}{}; run directory {}\n", spec_.name,
               net.parameter_count(), train_loader.dataset().size(), per_epoch, device.str(),
               dp ? fmt::format(" x {} ranks (batch {} = {} per rank)", world, spec_.train.batch_size,
                                spec_.train.batch_size / world)
                  : "",
               amp_on ? fmt::format(", {} autocast", amp::policy_str(amp_policy)) : "",
               dir->path());
  if (shards && !opt_.quiet)
    fmt::print(stderr, "sharding: optimizer_state: this rank keeps the optimizer state of {} of {} parameters ({:.2f} MiB)\n",
               shards->elements_of(rank), net.parameter_count(), static_cast<double>(optim.state_bytes()) / (1 << 20));
  // Every rank calls this at the same points: with sharding, the state is gathered from all of them.
  auto checkpoint = [&](const RunState& at) {
    if (shards) {
      const auto whole = shards->gather_state(optim.state(false), optim.state_suffixes());
      if (lead) save_checkpoint(ckpt, net, whole, at, facts, hash, scaler.state());
    } else if (lead) {
      save_checkpoint(ckpt, net, optim.state(), at, facts, hash, scaler.state());
    }
  };
  std::unique_ptr<dist::GradientReducer> reducer;
  if (dp)
    reducer = std::make_unique<dist::GradientReducer>(dp->gradient_group(device), optim.params(),
                                                      static_cast<size_t>(spec_.train.bucket_mb * (1 << 20)));

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

  NonFiniteCheck nan_check;
  std::unique_ptr<ScopedOpObserver> checking;  // a unique_ptr, not an optional: gcc 12 warns falsely on the latter
  if (spec_.train.check_nan_inf) checking = std::make_unique<ScopedOpObserver>(&nan_check);
  // One op observer at a time: with the NaN check installed, the profile times phases only.
  StepProfile profile(opt_.profile && lead, !spec_.train.check_nan_inf);
  const std::string feature = feat.name;
  for (; st.epoch < spec_.train.epochs; ++st.epoch, st.batch = 0, st.epoch_loss_sum = 0, st.epoch_samples = 0, st.epoch_seconds = 0) {
    train_loader.start_epoch(st.epoch, st.batch);
    const auto t0 = Clock::now();
    const double seconds_before = st.epoch_seconds;
    double lr = 0;
    profile.begin_epoch();
    while (auto b = train_loader.next()) {
      profile.mark(Phase::data);
      lr = sched.lr(st.step);
      // Formatted only when needed: no string work in a step that goes well.
      auto where = [&] { return fmt::format("step {} (epoch {}, batch {})", st.step + 1, st.epoch + 1, b->index + 1); };
      const int64_t n_local = b->y.numel();
      int64_t n = n_local;
      if (checking) nan_check.set_where(where() + ", forward");
      Tensor loss;
      double loss_value = 0;
      // A rank with an empty share of a short last batch skips the step, unless sync_batch_norm's sums
      // need it to take part.
      const bool take_part = n_local > 0 || stats_group;
      if (take_part) {
        // Autocast covers forward and loss only; backward runs each op in its forward dtype.
        std::unique_ptr<amp::AutocastScope> autocast;
        if (amp_on) autocast = std::make_unique<amp::AutocastScope>(amp_policy);
        auto values = net.forward({{feature, b->x.to(device)}}, true, st.step, {net.output_name()});
        loss = net.loss(values, b->y.to(device));
        if (n_local > 0) loss_value = loss.item<double>();
      }
      bool stop = g_signal != 0;
      if (dp) {
        // The batch's loss over all ranks, and whether any rank was asked to stop: every rank decides alike.
        std::vector<double> sums{loss_value * static_cast<double>(n_local), stop ? 1.0 : 0.0};
        dp->sum(sums, fmt::format("loss of step {}", st.step + 1));
        n = b->global_size;
        loss_value = sums[0] / static_cast<double>(n);
        stop = sums[1] > 0;
      }
      profile.mark(Phase::forward);
      // Checked before backward, so the weights never take a step from a NaN loss.
      PD_CHECK(std::isfinite(loss_value), ErrorCode::kInvalidArgument,
               "{}: the training loss is {}; stopped before the weights took a step from it (the last checkpoint is {}). "
               "Lower the learning rate (now {:.3g}), set train.clip_grad_norm, or run with --check-nan-inf to find the op "
               "and layer that first produced a NaN or Inf",
               where(), std::isnan(loss_value) ? "nan" : fmt::format("{}", loss_value),
               lead && fs::exists(ckpt) ? ckpt : "none yet", lr);
      if (checking) nan_check.set_where(where() + ", backward");
      if (!dp) {
        backward(scaler.scale_loss(loss));
      } else {
        // Each rank's mean loss, weighted by its share of the batch: the averaged gradients are then
        // exactly the gradient of the batch's mean loss, even when the shares differ.
        const double weight = static_cast<double>(n_local) * world / static_cast<double>(n);
        if (take_part) backward({loss}, {Tensor::full_scalar(weight * scaler.scale(), loss.dtype(), loss.place())});
        reducer->finish();
      }
      profile.mark(Phase::backward);
      // With f16 loss scaling, a step whose gradients overflowed is skipped (every rank alike: the
      // gradients are the same averages).
      if (scaler.unscale(optim.params())) {
        if (spec_.train.clip_grad_norm > 0) clip_grad_norm(optim.params(), spec_.train.clip_grad_norm);
        optim.step(lr);
        if (shards) shards->gather_parameters();
      }
      profile.mark(Phase::optimizer);
      st.epoch_loss_sum += loss_value * static_cast<double>(n);
      st.epoch_samples += n;
      ++st.step;
      st.batch = b->index + 1;
      st.epoch_seconds = seconds_before + seconds_since(t0);
      if (tty && (st.batch % spec_.train.log_every == 0 || st.batch == per_epoch)) {
        double rate = st.epoch_samples / std::max(st.epoch_seconds, 1e-9);
        double remaining = (per_epoch - st.batch) * spec_.train.batch_size / std::max(rate, 1e-9);
        fmt::print(stderr, "\repoch {}/{} step {}/{} loss {:.4f} lr {:.3g} {:.0f} samples/s ETA {}   ", st.epoch + 1,
                   spec_.train.epochs, st.batch, per_epoch, st.epoch_loss_sum / st.epoch_samples, lr, rate,
                   fmt_duration(remaining));
      }
      if (stop) {
        checkpoint(st);
        if (lead) {
          fmt::print(stderr, "\n{}: interrupted; checkpoint saved at epoch {} batch {}. Resume with: pd-train {} --out {} --resume\n",
                     spec_.name, st.epoch + 1, st.batch, spec_.file, dir->path());
        }
        return 130;
      }
      if (spec_.train.checkpoint_every > 0 && st.step % spec_.train.checkpoint_every == 0 && st.batch < per_epoch) checkpoint(st);
      profile.end_step();
    }
    profile.end_epoch();
    if (tty) fmt::print(stderr, "\r\033[K");
    if (checking) nan_check.set_where(fmt::format("evaluation after epoch {}", st.epoch + 1));
    EvalResult ev = evaluate(net, test_loader, feature, st.step, dp.get());
    EpochMetrics m{st.epoch + 1, st.epoch_samples ? st.epoch_loss_sum / st.epoch_samples : 0, ev.loss, ev.acc,
                   st.epoch_samples / std::max(st.epoch_seconds, 1e-9), seconds_before + seconds_since(t0), lr, st.step,
                   scaler.enabled() ? scaler.scale() : 0, scaler.skipped_steps()};
    history.push_back(m);
    // Metrics first, then the checkpoint: a kill between the two redoes the epoch and rewrites its line.
    if (lead) write_metrics(*dir, history, spec_.name);
    checkpoint(RunState{st.epoch + 1, 0, st.step});
    if (opt_.json) fmt::print("{}\n", metrics_json(m));
    else if (!opt_.quiet)
      fmt::print(stderr, "epoch {}/{}: train_loss {:.4f} test_loss {:.4f} test_acc {:.4f} ({:.0f} samples/s, {:.1f} s, peak RSS {:.0f} MiB{})\n",
                 m.epoch, spec_.train.epochs, m.train_loss, m.test_loss, m.test_acc, m.samples_per_s, m.seconds, peak_rss_mib(),
                 scaler.enabled() ? fmt::format(", loss scale {:g}, {} steps skipped", m.loss_scale, m.skipped_steps) : "");
    std::fflush(stdout);
    if (profile.enabled()) fmt::print(stderr, "{}", profile.report(m.epoch));
    if (opt_.stop_after_epoch > 0 && st.epoch + 1 >= opt_.stop_after_epoch && st.epoch + 1 < spec_.train.epochs) {
      if (!opt_.quiet) fmt::print(stderr, "stopping after epoch {} as asked; resume with --resume\n", st.epoch + 1);
      return 0;
    }
  }
  checking.reset();
  if (!lead) return 0;
  const double acc = history.empty() ? 0 : history.back().test_acc;
  net.to(Place::cpu());  // model files hold host tensors; export traces the network on the CPU
  save_model(dir->file("model.pdparams"), net, {{"test_acc", fmt::format("{:.5f}", acc)}});
  // The same model as a static program for pd-infer (model.pdmodel + model.pdiparams).
  io::save_program(dir->file("model.pdmodel"), model::to_program(net),
                   {{"name", spec_.name}, {"test_acc", fmt::format("{:.5f}", acc)}, {"model_yaml", spec_.yaml_text}});
  if (!opt_.quiet) fmt::print(stderr, "model written to {0}/model.pdparams and {0}/model.pdmodel\n", dir->path());
  return 0;
}

}  // namespace pd::train
