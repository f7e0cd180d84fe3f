#include "pd/bench/model_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>

#include "pd/model/layers.h"
#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/ops/op_profiler.h"
#include "pd/train/trainer.h"

namespace pd::bench {
using namespace pd::profiler;
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Cost of one timestamp pair around nothing: what each layer timer adds.
double clock_overhead_ns() {
  std::vector<int64_t> s;
  for (int r = 0; r < 21; ++r) {
    int64_t t0 = now_ns();
    for (int i = 0; i < 1000; ++i) {
      volatile int64_t a = now_ns();
      (void)a;
    }
    s.push_back((now_ns() - t0) / 1000);
  }
  std::nth_element(s.begin(), s.begin() + 10, s.end());
  return double(s[10]);
}

struct Acc {
  int64_t calls = 0, ns = 0;
};

}  // namespace

ModelReport bench_model(const std::string& path, int64_t batch, bool inference, double budget_ms, int min_steps,
                        int warmup) {
  train::LoadedModel lm = train::load_model(path);
  model::Network& net = *lm.net;
  const model::ModelSpec& spec = lm.spec;
  PD_CHECK(batch > 0, ErrorCode::kInvalidArgument, "--batch-size must be positive, got {}", batch);
  std::map<std::string, Tensor> inputs;
  Tensor labels;
  std::map<std::string, Tensor> probe;
  {
    NoGradGuard ng;
    for (const auto& in : spec.inputs) {
      if (in.name == spec.label_input) continue;
      Shape s = {batch};
      s.insert(s.end(), in.shape.begin(), in.shape.end());
      inputs[in.name] = is_floating(in.dtype) ? ops::cast(ops::uniform(s, -1, 1, 5, DType::f32), in.dtype) : ops::zeros(s, in.dtype);
    }
    probe = net.forward(inputs, false, 0);
    for (const auto& in : spec.inputs)
      if (in.name == spec.label_input) {
        Shape s = {batch};
        s.insert(s.end(), in.shape.begin(), in.shape.end());
        double classes = double(probe.at(spec.loss_input).shape().back());
        labels = ops::cast(ops::cast(ops::uniform(s, 0, classes, 6, DType::f64), DType::i64), in.dtype);
      }
  }
  // The Network runs its layers as one call, so a twin list of the same layers with the loaded
  // parameters is built here to time each layer's forward on its own.
  std::vector<model::ParamInfo> params;
  model::ParamFactory pf(params, 0);
  std::vector<std::unique_ptr<model::Layer>> layers;
  for (const auto& l : spec.layers) {
    std::vector<Shape> shapes;
    for (const auto& n : l.inputs) shapes.push_back(probe.at(n).shape());
    layers.push_back(model::make_layer(l));
    layers.back()->build(shapes, pf);
  }
  auto state = net.state();
  for (auto& p : params) {
    const Tensor& src = state.at(p.name);
    std::memcpy(p.value.raw_data(), src.contiguous().raw_data(), size_t(src.numel()) * dtype_size(src.dtype()));
  }
  bool train = !inference;
  std::map<std::string, Acc> acc;
  auto label = [&](size_t i, const char* dir) { return spec.layers[i].name + " (" + spec.layers[i].type + ") " + dir; };
  const std::string loss_name = "loss (" + spec.loss_type + ")";

  auto timed_step = [&](int64_t step) {  // per-layer timers; backward split by gradient hooks
    std::optional<NoGradGuard> ng;
    if (!train) ng.emplace();
    for (auto& p : params) p.value.zero_grad();
    int64_t begin = now_ns();
    std::map<std::string, Tensor> vals = inputs;
    std::vector<std::pair<int64_t, int64_t>> events;  // (layer, time its output's gradient arrived)
    for (size_t i = 0; i < layers.size(); ++i) {
      std::vector<Tensor> in;
      for (const auto& n : spec.layers[i].inputs) in.push_back(vals.at(n));
      int64_t t0 = now_ns();
      Tensor out = layers[i]->forward(in, model::ForwardCtx{train, uint64_t(step * 1000 + i)});
      Acc& a = acc[label(i, "fwd")];
      a.ns += now_ns() - t0, a.calls++;
      if (train && out.requires_grad())
        out.register_hook([&events, i](const Tensor& g) { events.push_back({int64_t(i), now_ns()}); return g; });
      vals[spec.layers[i].name] = out;
    }
    if (!train) return now_ns() - begin;
    int64_t t0 = now_ns();
    Tensor loss = net.loss(vals, labels);
    int64_t t1 = now_ns();
    acc[loss_name + " fwd"].ns += t1 - t0, acc[loss_name + " fwd"].calls++;
    pd::backward(loss);
    int64_t t2 = now_ns();
    // The interval before a layer's output gradient arrives belongs to whatever ran just before: the
    // loss, or the layer whose gradient came before (exact for chains, approximate for branches).
    std::string owner = loss_name + " bwd";
    int64_t prev = t1;
    for (auto [i, t] : events) {
      acc[owner].ns += t - prev, acc[owner].calls++;
      owner = label(size_t(i), "bwd"), prev = t;
    }
    acc[owner].ns += t2 - prev, acc[owner].calls++;
    return t2 - begin;
  };
  auto plain_step = [&](int64_t step) {  // the network as pd-train runs it, returns ns
    std::optional<NoGradGuard> ng;
    if (!train) ng.emplace();
    for (auto& p : net.params()) p.value.zero_grad();
    int64_t t0 = now_ns();
    auto vals = net.forward(inputs, train, step);
    if (train) pd::backward(net.loss(vals, labels));
    return now_ns() - t0;
  };

  ModelReport rep;
  rep.batch = batch, rep.inference = inference;
  // Every generated op reports to the op observer hook; use per-op rows when one step records any.
  profile_reset();
  set_profiling(true);
  plain_step(0);
  set_profiling(false);
  bool per_op = !profile_snapshot().empty();
  rep.granularity = per_op ? "op" : "layer";
  rep.overhead_ns = per_op ? timer_overhead_ns() : clock_overhead_ns();
  for (int w = 0; w < warmup; ++w) timed_step(w), plain_step(w);
  acc.clear();
  profile_reset();
  int64_t plain_ns = 0, timed_ns = 0;
  auto start = now_ns();
  // Instrumented and plain steps alternate so that both see the same machine state.
  while (rep.steps < min_steps || (now_ns() - start) < budget_ms * 1e6) {
    if (per_op) {
      set_profiling(true);
      timed_ns += plain_step(rep.steps);
      set_profiling(false);
    } else {
      timed_ns += timed_step(rep.steps);
    }
    plain_ns += plain_step(rep.steps);
    ++rep.steps;
  }
  if (per_op)
    for (const auto& s : profile_snapshot()) acc[s.name] = {s.calls, s.ns};
  for (const auto& [name, a] : acc) {
    ModelRow r{name, a.calls, std::max(0.0, (double(a.ns) - a.calls * rep.overhead_ns) / 1e6)};
    rep.sum_ms += r.total_ms;
    rep.rows.push_back(r);
  }
  std::sort(rep.rows.begin(), rep.rows.end(), [](const ModelRow& a, const ModelRow& b) { return a.total_ms > b.total_ms; });
  rep.total_ms = timed_ns / 1e6;
  rep.plain_ms = plain_ns / 1e6;
  return rep;
}

}  // namespace pd::bench
