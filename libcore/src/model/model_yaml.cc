// Model YAML -> ModelSpec. Every error is "FILE:LINE:COL: what was wrong, what was expected".
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "pd/model/layers.h"
#include "pd/io/tensor_file.h"
#include "pd/model/network.h"

namespace pd::model {
namespace {

// Bounds on what a recipe can ask for: far above any real run, low enough that a typo is caught.
constexpr int64_t kMaxBatch = int64_t{1} << 24;
constexpr int64_t kMaxEpochs = 1000000;
constexpr int64_t kMaxThreads = 4096;

// yaml-cpp keeps the last of two equal keys; a file that says a value twice is ambiguous: refuse it.
void check_duplicate_keys(const YAML::Node& n, const std::string& file) {
  if (n.IsSequence())
    for (const auto& x : n) check_duplicate_keys(x, file);
  if (!n.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;
  for (const auto& kv : n) {
    if (kv.first.IsScalar()) {
      auto [it, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
      if (!fresh)
        raise(ErrorCode::kParse, "{}:{}:{}: key '{}' appears twice in this map (first at line {})", file, kv.first.Mark().line + 1,
              kv.first.Mark().column + 1, kv.first.Scalar(), it->second.line + 1);
    }
    check_duplicate_keys(kv.second, file);
  }
}


struct Ctx {
  std::string file;
  SourcePos pos(const YAML::Node& n) const { return {file, n.Mark().line + 1, n.Mark().column + 1}; }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const {
    raise(ErrorCode::kParse, "{}: {}", pos(n).str(), msg);
  }
  void check_keys(const YAML::Node& map, const std::string& where, const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(map, fmt::format("{} must be a map", where));
    for (const auto& kv : map)
      if (!allowed.count(kv.first.Scalar()))
        fail(kv.first, fmt::format("unknown key '{}' in {} (expected one of: {})", kv.first.Scalar(), where, fmt::join(allowed, ", ")));
  }
  int64_t integer(const YAML::Node& n, const std::string& key, int64_t min) const {
    int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v))
      fail(n, fmt::format("key '{}': expected an integer, got '{}'", key, n.IsScalar() ? n.Scalar() : "a list or map"));
    if (v < min) fail(n, fmt::format("key '{}': expected an integer >= {}, got {}", key, min, v));
    return v;
  }
  double number(const YAML::Node& n, const std::string& key) const {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v))
      fail(n, fmt::format("key '{}': expected a finite number, got '{}'", key, n.IsScalar() ? n.Scalar() : "a list or map"));
    return v;
  }
  // A number in a range; `range` is how the message writes it, e.g. "[0, 1)".
  double number_in(const YAML::Node& n, const std::string& key, bool ok(double), const char* range) const {
    const double v = number(n, key);
    if (!ok(v)) fail(n, fmt::format("key '{}': expected a number in {}, got {}", key, range, n.Scalar()));
    return v;
  }
  int64_t integer_in(const YAML::Node& n, const std::string& key, int64_t min, int64_t max) const {
    const int64_t v = integer(n, key, INT64_MIN);
    if (v < min || v > max) fail(n, fmt::format("key '{}': expected an integer in [{}, {}], got {}", key, min, max, v));
    return v;
  }
  bool boolean(const YAML::Node& n, const std::string& key) const {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) fail(n, fmt::format("key '{}': expected true or false", key));
    return v;
  }
  std::string text(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, fmt::format("key '{}': expected a single value", key));
    return n.Scalar();
  }
  std::vector<int64_t> ints(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence()) fail(n, fmt::format("key '{}': expected a list of integers such as [1, 28, 28]", key));
    std::vector<int64_t> out;
    for (const auto& x : n) out.push_back(integer(x, key, INT64_MIN));
    return out;
  }
  std::vector<double> numbers(const YAML::Node& n, const std::string& key) const {
    if (n.IsScalar()) return {number(n, key)};
    if (!n.IsSequence()) fail(n, fmt::format("key '{}': expected a number or a list of numbers", key));
    std::vector<double> out;
    for (const auto& x : n) out.push_back(number(x, key));
    return out;
  }
};

// The name becomes runs/NAME: one path component of plain characters.
void check_name(const Ctx& c, const YAML::Node& n, const std::string& name) {
  const bool plain = !name.empty() && name.size() <= 128 && name[0] != '.' && name[0] != '-' &&
                     name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == std::string::npos;
  if (!plain)
    c.fail(n, fmt::format("key 'name': '{}' is not a usable run name (letters, digits, '.', '_' and '-', at most 128, not "
                          "starting with '.' or '-'; it names the run directory runs/NAME)",
                          name));
}

// A YAML value as a layer attribute: integers, numbers, booleans, strings and lists of integers.
AttrValue to_attr(const Ctx& c, const YAML::Node& n, const std::string& key) {
  if (n.IsSequence()) {
    std::vector<int64_t> ints;
    std::vector<double> reals;
    bool all_int = true;
    for (const auto& x : n) {
      int64_t i;
      double d;
      if (x.IsScalar() && YAML::convert<int64_t>::decode(x, i)) {
        ints.push_back(i);
        reals.push_back(static_cast<double>(i));
      } else if (x.IsScalar() && YAML::convert<double>::decode(x, d)) {
        all_int = false;
        reals.push_back(d);
      } else {
        c.fail(x, fmt::format("key '{}': expected a list of numbers", key));
      }
    }
    if (all_int) return ints;
    return reals;
  }
  if (!n.IsScalar()) c.fail(n, fmt::format("key '{}': expected a value or a list", key));
  int64_t i;
  double d;
  bool b;
  if (YAML::convert<int64_t>::decode(n, i)) return i;
  if (YAML::convert<double>::decode(n, d)) return d;
  if (n.Scalar() == "true" || n.Scalar() == "false") {
    YAML::convert<bool>::decode(n, b);
    return b;
  }
  return n.Scalar();
}

void parse_inputs(const Ctx& c, const YAML::Node& node, ModelSpec& spec) {
  if (!node.IsMap() || node.size() == 0) c.fail(node, "inputs must map each input name to {shape: [...], dtype: ...}");
  for (const auto& kv : node) {
    InputSpec in;
    in.name = kv.first.Scalar();
    in.pos = c.pos(kv.first);
    c.check_keys(kv.second, "input '" + in.name + "'", {"shape", "dtype"});
    if (!kv.second["shape"]) c.fail(kv.second, fmt::format("input '{}' needs 'shape' (per sample, without the batch axis)", in.name));
    in.shape = c.ints(kv.second["shape"], "shape");
    if (kv.second["dtype"]) {
      try {
        in.dtype = dtype_from_name(c.text(kv.second["dtype"], "dtype"));
      } catch (const Error& e) {
        c.fail(kv.second["dtype"], e.what());
      }
    }
    spec.inputs.push_back(in);
  }
}

void parse_network(const Ctx& c, const YAML::Node& node, ModelSpec& spec) {
  if (!node.IsSequence() || node.size() == 0) c.fail(node, "network must be a list of layers");
  std::set<std::string> known;
  for (const auto& in : spec.inputs) known.insert(in.name);
  std::string previous = spec.inputs.empty() ? "" : spec.inputs[0].name;
  for (const auto& ln : node) {
    if (!ln.IsMap() || !ln["type"]) c.fail(ln, "each layer must be a map with 'type' (see docs/model-yaml.md)");
    LayerSpec l;
    l.pos = c.pos(ln);
    l.type = c.text(ln["type"], "type");
    const std::set<std::string>* keys = layer_keys(l.type);
    if (!keys) c.fail(ln["type"], fmt::format("unknown layer type '{}' (expected one of: {})", l.type, fmt::join(layer_types(), ", ")));
    l.name = ln["name"] ? c.text(ln["name"], "name") : fmt::format("{}{}", l.type, spec.layers.size());
    if (known.count(l.name)) c.fail(ln["name"] ? ln["name"] : ln, fmt::format("name '{}' is already used by an input or an earlier layer", l.name));
    for (const auto& kv : ln) {
      std::string key = kv.first.Scalar();
      if (key == "type" || key == "name") continue;
      if (key == "input") {
        l.inputs = {c.text(kv.second, key)};
      } else if (key == "inputs") {
        if (!kv.second.IsSequence()) c.fail(kv.second, "key 'inputs': expected a list of layer or input names");
        for (const auto& x : kv.second) l.inputs.push_back(c.text(x, key));
      } else if (key == "attrs" && l.type == "op") {
        for (const auto& a : kv.second) l.op_attrs[a.first.Scalar()] = to_attr(c, a.second, a.first.Scalar());
        l.attr_pos[key] = c.pos(kv.second);
      } else if (keys->count(key)) {
        l.attrs[key] = to_attr(c, kv.second, key);
        l.attr_pos[key] = c.pos(kv.second);
      } else {
        c.fail(kv.first, fmt::format("unknown key '{}' for a {} layer (expected: {})", key, l.type,
                                     fmt::join(*keys, ", ")));
      }
    }
    if (l.inputs.empty()) l.inputs = {previous};
    for (const auto& in : l.inputs)
      if (!known.count(in))
        c.fail(ln["inputs"] ? ln["inputs"] : ln["input"] ? ln["input"] : ln,
               fmt::format("layer '{}' reads '{}', which is not an input or an earlier layer", l.name, in));
    // An attention mask names an input or a layer too; it reaches the layer as its last input.
    if (auto it = l.attrs.find("mask"); it != l.attrs.end()) {
      auto name = std::get_if<std::string>(&it->second);
      if (!name || !known.count(*name))
        c.fail(ln["mask"], fmt::format("layer '{}': key 'mask' must name an input or an earlier layer, got {}", l.name,
                                       attr_str(it->second)));
      l.inputs.push_back(*name);
    }
    known.insert(l.name);
    previous = l.name;
    spec.layers.push_back(l);
  }
}

void parse_loss(const Ctx& c, const YAML::Node& node, ModelSpec& spec) {
  c.check_keys(node, "loss", {"type", "input", "label", "label_smoothing", "ignore_index"});
  if (node["type"] && c.text(node["type"], "type") != "cross_entropy")
    c.fail(node["type"], fmt::format("unknown loss '{}' (expected cross_entropy)", node["type"].Scalar()));
  if (node["input"]) spec.loss_input = c.text(node["input"], "input");
  if (node["label"]) spec.label_input = c.text(node["label"], "label");
  if (node["label_smoothing"])
    spec.loss_attrs["label_smoothing"] = c.number_in(node["label_smoothing"], "label_smoothing", [](double v) { return v >= 0 && v < 1; }, "[0, 1)");
  if (node["ignore_index"]) spec.loss_attrs["ignore_index"] = c.integer(node["ignore_index"], "ignore_index", INT64_MIN);
}

DataSourceSpec parse_source(const Ctx& c, const YAML::Node& node, const std::string& where) {
  c.check_keys(node, where, {"format", "features", "labels", "label_column", "header", "limit", "allow_non_finite"});
  DataSourceSpec s;
  s.pos = c.pos(node);
  s.format = node["format"] ? c.text(node["format"], "format") : "idx";
  if (s.format != "idx" && s.format != "npy" && s.format != "csv")
    c.fail(node["format"], fmt::format("unknown data format '{}' (expected idx, npy or csv)", s.format));
  if (!node["features"]) c.fail(node, fmt::format("{} needs 'features' (a file path)", where));
  s.features = c.text(node["features"], "features");
  if (node["labels"]) s.labels = c.text(node["labels"], "labels");
  else if (s.format != "csv") c.fail(node, fmt::format("{} needs 'labels' (a file path)", where));
  if (node["label_column"]) s.label_column = c.integer(node["label_column"], "label_column", INT64_MIN);
  if (node["header"]) s.header = c.boolean(node["header"], "header");
  if (node["limit"]) s.limit = c.integer(node["limit"], "limit", 1);  // no key: every sample
  if (node["allow_non_finite"]) s.allow_non_finite = c.boolean(node["allow_non_finite"], "allow_non_finite");
  return s;
}

std::vector<data::Transform> parse_transforms(const Ctx& c, const YAML::Node& node) {
  if (!node.IsSequence()) c.fail(node, "transforms must be a list such as [{scale: 0.00392}, {normalize: {mean: [0.286], std: [0.353]}}]");
  std::vector<data::Transform> out;
  for (const auto& t : node) {
    c.check_keys(t, "a transform", {"scale", "normalize", "random_flip", "random_crop"});
    if (t.size() != 1) c.fail(t, "each transform is a map with exactly one key");
    data::Transform tr;
    const auto& kv = *t.begin();
    std::string kind = kv.first.Scalar();
    if (kind == "scale") {
      tr.kind = data::Transform::Scale;
      tr.scale = c.number_in(kv.second, kind, [](double v) { return v != 0; }, "(-inf, 0) or (0, inf)");
    } else if (kind == "normalize") {
      tr.kind = data::Transform::Normalize;
      c.check_keys(kv.second, "normalize", {"mean", "std"});
      if (!kv.second["mean"] || !kv.second["std"]) c.fail(kv.second, "normalize needs 'mean' and 'std'");
      tr.mean = c.numbers(kv.second["mean"], "mean");
      tr.std = c.numbers(kv.second["std"], "std");
      for (double s : tr.std)
        if (s <= 0) c.fail(kv.second["std"], "key 'std': every value must be positive");
    } else if (kind == "random_flip") {
      tr.kind = data::Transform::RandomFlip;
      tr.p = c.number_in(kv.second, kind, [](double v) { return v >= 0 && v <= 1; }, "[0, 1]");
    } else {
      tr.kind = data::Transform::RandomCrop;
      c.check_keys(kv.second, "random_crop", {"padding"});
      if (!kv.second["padding"]) c.fail(kv.second, "random_crop needs 'padding' (pixels added on each side before the crop)");
      tr.padding = c.integer(kv.second["padding"], "padding", 0);
    }
    out.push_back(tr);
  }
  return out;
}

void parse_data(const Ctx& c, const YAML::Node& node, ModelSpec& spec) {
  c.check_keys(node, "data", {"train", "test", "transforms", "train_transforms"});
  if (!node["train"] || !node["test"]) c.fail(node, "data needs 'train' and 'test' sources");
  spec.data.train = parse_source(c, node["train"], "data.train");
  spec.data.test = parse_source(c, node["test"], "data.test");
  if (node["transforms"]) spec.data.transforms = parse_transforms(c, node["transforms"]);
  if (node["train_transforms"]) spec.data.train_transforms = parse_transforms(c, node["train_transforms"]);
  spec.has_data = true;
}

void parse_train(const Ctx& c, const YAML::Node& node, ModelSpec& spec) {
  c.check_keys(node, "train", {"batch_size", "epochs", "seed", "optimizer", "schedule", "clip_grad_norm", "log_every", "threads",
                               "device", "check_nan_inf", "checkpoint_every", "bucket_mb", "sharding", "sync_batch_norm",
                               "amp", "deterministic"});
  TrainSpec& t = spec.train;
  if (node["batch_size"]) t.batch_size = c.integer_in(node["batch_size"], "batch_size", 1, kMaxBatch);
  if (node["epochs"]) t.epochs = c.integer_in(node["epochs"], "epochs", 1, kMaxEpochs);
  if (node["seed"]) t.seed = static_cast<uint64_t>(c.integer(node["seed"], "seed", 0));
  if (node["clip_grad_norm"])
    t.clip_grad_norm = c.number_in(node["clip_grad_norm"], "clip_grad_norm", [](double v) { return v > 0; }, "(0, inf) (omit it for no clipping)");
  if (node["log_every"]) t.log_every = c.integer(node["log_every"], "log_every", 1);
  if (node["threads"]) t.threads = static_cast<int>(c.integer_in(node["threads"], "threads", 1, kMaxThreads));
  if (node["device"]) {
    t.device = c.text(node["device"], "device");
    // Only the spelling: whether this machine has the device is for the run to find out, not --check.
    const bool cuda_n = t.device.rfind("cuda:", 0) == 0 && t.device.size() > 5 && t.device.size() < 9 &&
                        t.device.find_first_not_of("0123456789", 5) == std::string::npos;
    if (t.device != "cpu" && t.device != "cuda" && !cuda_n)
      c.fail(node["device"], fmt::format("key 'device': expected cpu, cuda or cuda:N, got '{}'", t.device));
  }
  if (node["check_nan_inf"]) t.check_nan_inf = c.boolean(node["check_nan_inf"], "check_nan_inf");
  if (node["checkpoint_every"]) t.checkpoint_every = c.integer(node["checkpoint_every"], "checkpoint_every", 1);
  if (node["bucket_mb"])
    t.bucket_mb = c.number_in(node["bucket_mb"], "bucket_mb", [](double v) { return v > 0 && v <= 4096; }, "(0, 4096] (MiB)");
  if (node["sharding"]) {
    const std::string sharding = c.text(node["sharding"], "sharding");
    if (sharding != "none" && sharding != "optimizer_state")
      c.fail(node["sharding"], fmt::format("key 'sharding': expected none or optimizer_state, got '{}'", sharding));
    t.shard_optimizer_state = sharding == "optimizer_state";
  }
  if (node["sync_batch_norm"]) t.sync_batch_norm = c.boolean(node["sync_batch_norm"], "sync_batch_norm");
  if (node["deterministic"]) t.deterministic = c.boolean(node["deterministic"], "deterministic");
  if (const YAML::Node a = node["amp"]) {
    if (!a.IsMap()) c.fail(a, "key 'amp': expected a map such as {dtype: bf16, level: O1}");
    c.check_keys(a, "amp", {"dtype", "level"});
    t.amp_dtype = a["dtype"] ? c.text(a["dtype"], "dtype") : "bf16";
    if (t.amp_dtype != "bf16" && t.amp_dtype != "f16")
      c.fail(a["dtype"], fmt::format("key 'amp.dtype': expected bf16 or f16, got '{}'", t.amp_dtype));
    if (a["level"]) t.amp_level = c.text(a["level"], "level");
    if (t.amp_level != "O1" && t.amp_level != "O2")
      c.fail(a["level"], fmt::format("key 'amp.level': expected O1 or O2, got '{}'", t.amp_level));
  }
  t.schedule.base_lr = 0.01;
  if (const YAML::Node o = node["optimizer"]) {
    c.check_keys(o, "optimizer", {"type", "lr", "momentum", "nesterov", "beta1", "beta2", "eps", "weight_decay"});
    std::string type = o["type"] ? c.text(o["type"], "type") : "sgd";
    static const std::map<std::string, train::OptimizerKind> kinds = {{"sgd", train::OptimizerKind::SGD},
                                                                      {"momentum", train::OptimizerKind::Momentum},
                                                                      {"adam", train::OptimizerKind::Adam},
                                                                      {"adamw", train::OptimizerKind::AdamW}};
    if (!kinds.count(type)) c.fail(o["type"], fmt::format("unknown optimizer '{}' (expected sgd, momentum, adam or adamw)", type));
    t.optimizer.kind = kinds.at(type);
    const auto positive = [](double v) { return v > 0; };
    const auto unit_open = [](double v) { return v >= 0 && v < 1; };
    if (o["lr"]) t.schedule.base_lr = c.number_in(o["lr"], "lr", positive, "(0, inf)");
    if (o["momentum"]) t.optimizer.momentum = c.number_in(o["momentum"], "momentum", unit_open, "[0, 1)");
    if (o["nesterov"]) t.optimizer.nesterov = c.boolean(o["nesterov"], "nesterov");
    if (o["beta1"]) t.optimizer.beta1 = c.number_in(o["beta1"], "beta1", unit_open, "[0, 1)");
    if (o["beta2"]) t.optimizer.beta2 = c.number_in(o["beta2"], "beta2", unit_open, "[0, 1)");
    if (o["eps"]) t.optimizer.eps = c.number_in(o["eps"], "eps", positive, "(0, inf)");
    if (o["weight_decay"])
      t.optimizer.weight_decay = c.number_in(o["weight_decay"], "weight_decay", [](double v) { return v >= 0; }, "[0, inf)");
  }
  if (const YAML::Node s = node["schedule"]) {
    c.check_keys(s, "schedule", {"type", "step_size", "milestones", "gamma", "min_lr", "warmup_steps", "warmup_start_factor"});
    t.schedule_kind = s["type"] ? c.text(s["type"], "type") : "constant";
    static const std::map<std::string, train::ScheduleKind> kinds = {{"constant", train::ScheduleKind::Constant},
                                                                     {"step", train::ScheduleKind::Step},
                                                                     {"multistep", train::ScheduleKind::MultiStep},
                                                                     {"cosine", train::ScheduleKind::Cosine}};
    if (!kinds.count(t.schedule_kind))
      c.fail(s["type"], fmt::format("unknown schedule '{}' (expected constant, step, multistep or cosine)", t.schedule_kind));
    t.schedule.kind = kinds.at(t.schedule_kind);
    if (s["step_size"]) t.schedule.step_size = c.integer(s["step_size"], "step_size", 1);
    if (s["milestones"]) {
      t.schedule.milestones = c.ints(s["milestones"], "milestones");
      for (size_t i = 0; i < t.schedule.milestones.size(); ++i)
        if (t.schedule.milestones[i] < 1 || (i > 0 && t.schedule.milestones[i] <= t.schedule.milestones[i - 1]))
          c.fail(s["milestones"], "key 'milestones': expected increasing step numbers >= 1, such as [1000, 2000]");
    }
    if (s["gamma"]) t.schedule.gamma = c.number_in(s["gamma"], "gamma", [](double v) { return v > 0; }, "(0, inf)");
    if (s["min_lr"]) t.schedule.min_lr = c.number_in(s["min_lr"], "min_lr", [](double v) { return v >= 0; }, "[0, inf)");
    if (s["warmup_steps"]) t.schedule.warmup_steps = c.integer(s["warmup_steps"], "warmup_steps", 0);
    if (s["warmup_start_factor"])
      t.schedule.warmup_start_factor =
          c.number_in(s["warmup_start_factor"], "warmup_start_factor", [](double v) { return v >= 0 && v <= 1; }, "[0, 1]");
    if (t.schedule.kind == train::ScheduleKind::Step && t.schedule.step_size <= 0) c.fail(s, "a step schedule needs 'step_size'");
  }
  spec.has_train = true;
}

// What training would find out at its first batch, found here so that --check finds it too: labels
// are class indices (one integer per sample), and the transforms fit the feature input's shape.
void check_data_fits(const Ctx& c, const YAML::Node& data, const ModelSpec& spec) {
  const InputSpec* label = nullptr;
  const InputSpec* feature = nullptr;
  for (const auto& in : spec.inputs) {
    if (in.name == spec.label_input) label = &in;
    else if (!feature) feature = &in;
  }
  if (label) {
    if (!is_integral(label->dtype) || !label->shape.empty())
      raise(ErrorCode::kParse, "{}: input '{}' holds the labels: cross_entropy takes one integer class index per sample, so it "
            "needs shape [] and dtype i64 or i32, not shape {} dtype {}",
            label->pos.str(), label->name, shape_str(label->shape), dtype_name(label->dtype));
  }
  if (!feature) return;
  for (const char* key : {"transforms", "train_transforms"}) {
    const auto& list = std::string(key) == "transforms" ? spec.data.transforms : spec.data.train_transforms;
    for (size_t i = 0; i < list.size(); ++i) {
      try {
        data::check_transform(list[i], feature->shape);
      } catch (const Error& e) {
        c.fail(data[key][i], fmt::format("{} (input '{}' has per-sample shape {})", e.what(), feature->name, shape_str(feature->shape)));
      }
    }
  }
}

}  // namespace

std::string SourcePos::str() const { return fmt::format("{}:{}:{}", file, line, col); }

ModelSpec parse_model_yaml(const std::string& text, const std::string& file) {
  Ctx c{file};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    raise(ErrorCode::kParse, "{}:{}:{}: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  ModelSpec spec;
  spec.file = file;
  spec.yaml_text = text;
  if (!root.IsMap()) raise(ErrorCode::kParse, "{}: a model YAML must be a map with inputs, network, loss, data, train", file);
  check_duplicate_keys(root, file);
  c.check_keys(root, "the model file", {"name", "inputs", "network", "loss", "data", "train"});
  spec.name = root["name"] ? c.text(root["name"], "name") : "model";
  if (root["name"]) check_name(c, root["name"], spec.name);
  if (!root["inputs"]) raise(ErrorCode::kParse, "{}: missing 'inputs' (the network's inputs with per-sample shapes)", file);
  if (!root["network"]) raise(ErrorCode::kParse, "{}: missing 'network' (the list of layers)", file);
  parse_inputs(c, root["inputs"], spec);
  parse_network(c, root["network"], spec);
  if (root["loss"]) parse_loss(c, root["loss"], spec);
  if (spec.loss_input.empty()) spec.loss_input = spec.layers.back().name;
  if (spec.label_input.empty())
    for (const auto& in : spec.inputs)
      if (in.dtype == DType::i64 || in.dtype == DType::i32) spec.label_input = in.name;
  bool found = false;
  for (const auto& l : spec.layers) found |= l.name == spec.loss_input;
  if (!found) c.fail(root["loss"]["input"], fmt::format("loss input '{}' is not a layer", spec.loss_input));
  if (root["data"]) parse_data(c, root["data"], spec);
  if (root["train"]) parse_train(c, root["train"], spec);
  if (spec.has_data) check_data_fits(c, root["data"], spec);
  return spec;
}

ModelSpec load_model_yaml(const std::string& path) {
  std::error_code ec;
  PD_CHECK(!std::filesystem::is_directory(path, ec), ErrorCode::kIO, "{}: is a directory, not a model YAML file", path);
  std::ifstream in(path);
  PD_CHECK(in.good(), ErrorCode::kIO, "{}: cannot open the model file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_model_yaml(ss.str(), path);
}

uint64_t spec_hash(const ModelSpec& spec) {
  std::string s;
  for (const auto& in : spec.inputs) s += fmt::format("in {} {} {};", in.name, shape_str(in.shape), dtype_name(in.dtype));
  for (const auto& l : spec.layers) {
    s += fmt::format("layer {} {} {};", l.name, l.type, fmt::join(l.inputs, ","));
    for (const auto& [k, v] : l.attrs) s += fmt::format("{}={};", k, attr_str(v));
    for (const auto& [k, v] : l.op_attrs) s += fmt::format("attr {}={};", k, attr_str(v));
  }
  s += fmt::format("loss {} {};", spec.loss_input, spec.label_input);
  for (const auto& [k, v] : spec.loss_attrs) s += fmt::format("{}={};", k, attr_str(v));
  const auto& o = spec.train.optimizer;
  s += fmt::format("opt {} {} {} {} {} {} {};", static_cast<int>(o.kind), o.momentum, o.nesterov, o.beta1, o.beta2, o.eps,
                   o.weight_decay);
  const auto& sc = spec.train.schedule;
  s += fmt::format("sched {} {} {} {} {} {} {};", spec.train.schedule_kind, sc.base_lr, sc.step_size, fmt::join(sc.milestones, ","),
                   sc.gamma, sc.min_lr, sc.warmup_steps);
  s += fmt::format("batch {} seed {}", spec.train.batch_size, spec.train.seed);  // epochs may grow on resume
  return io::fnv1a64(s.data(), s.size());
}

}  // namespace pd::model
