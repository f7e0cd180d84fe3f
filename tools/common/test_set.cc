// load_test_set: the YAML spec (positions kept for messages), its reader and transforms, and the checks
// that the samples fit the program's input.
#include "common/test_set.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "op_api.h"
#include "pd/core/tensor_inl.h"
#include "pd/data/readers.h"
#include "pd/exec/executor.h"

namespace pd::tools {
namespace {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw InputError(fmt::format(f, std::forward<Args>(args)...));
}

// Positions in the spec file, so that a bad key points at its line.
struct Spec {
  std::string file;
  std::string at(const YAML::Node& n) const { return fmt::format("{}:{}:{}", file, n.Mark().line + 1, n.Mark().column + 1); }
  std::string text(const YAML::Node& n, const char* key) const {
    if (!n.IsScalar()) fail("{}: key '{}': expected a single value", at(n), key);
    return n.Scalar();
  }
  template <typename T>
  T as(const YAML::Node& n, const char* key, const char* what) const {
    T v{};
    if (!n.IsScalar() || !YAML::convert<T>::decode(n, v)) fail("{}: key '{}': expected {}", at(n), key, what);
    return v;
  }
  std::vector<double> numbers(const YAML::Node& n, const char* key) const {
    if (n.IsScalar()) return {as<double>(n, key, "a number")};
    if (!n.IsSequence()) fail("{}: key '{}': expected a number or a list of numbers", at(n), key);
    std::vector<double> out;
    for (const auto& x : n) out.push_back(as<double>(x, key, "a number"));
    return out;
  }
};

std::vector<data::Transform> parse_transforms(const Spec& s, const YAML::Node& node) {
  if (!node.IsSequence()) fail("{}: transforms must be a list such as [{{scale: 0.00392}}]", s.at(node));
  std::vector<data::Transform> out;
  for (const auto& t : node) {
    if (!t.IsMap() || t.size() != 1) fail("{}: each transform is a map with one key (scale or normalize)", s.at(t));
    const std::string kind = t.begin()->first.Scalar();
    const YAML::Node v = t.begin()->second;
    data::Transform tr;
    if (kind == "scale") {
      tr.kind = data::Transform::Scale;
      tr.scale = s.as<double>(v, "scale", "a number");
    } else if (kind == "normalize") {
      tr.kind = data::Transform::Normalize;
      if (!v.IsMap() || !v["mean"] || !v["std"]) fail("{}: normalize needs 'mean' and 'std'", s.at(v));
      tr.mean = s.numbers(v["mean"], "mean");
      tr.std = s.numbers(v["std"], "std");
      for (double x : tr.std)
        if (x <= 0) fail("{}: key 'std': every value must be positive", s.at(v["std"]));
    } else if (kind == "random_flip" || kind == "random_crop") {
      continue;  // training-time augmentation: not applied to test data
    } else {
      fail("{}: unknown transform '{}' (expected scale or normalize)", s.at(t), kind);
    }
    out.push_back(tr);
  }
  return out;
}

// A label outside the model's classes can never be predicted: counted, it would read as a wrong answer
// and lower the accuracy silently. Classes come from the first output, [batch, classes], when static.
void check_label_range(const ir::Program& p, const Tensor& labels, const std::string& where) {
  const Shape& out = p.value(p.outputs().at(0)).type.shape;
  if (out.size() != 2 || out[1] < 2) return;  // not a classifier's logits (or classes unknown until run)
  const int64_t classes = out[1];
  const auto v = labels.to_vector<int64_t>();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] < 0 || v[i] >= classes)
      fail("{}: sample {} has label {}, but the model has {} classes (labels 0 to {})", where, i, v[i], classes, classes - 1);
}

}  // namespace

TestSet load_test_set(const ir::Program& p, const std::string& spec_path, int64_t limit, const char* flag) {
  if (p.inputs().size() != 1) fail("{} feeds one input, but the model expects {}", flag, exec::describe_inputs(p));
  const ir::Value& input = p.value(p.inputs()[0]);
  if (input.type.dtype != DType::f32) fail("{} gives f32 features, but the model expects {}", flag, exec::describe_inputs(p));
  Spec s{spec_path};
  YAML::Node root;
  try {
    root = YAML::LoadFile(spec_path);
  } catch (const YAML::BadFile&) {
    fail("{} {}: cannot open the file", flag, spec_path);
  } catch (const YAML::Exception& e) {
    fail("{}:{}:{}: {}", spec_path, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  const YAML::Node section = root.IsMap() && root["data"] ? root["data"] : root;
  if (!section.IsMap() || !section["test"]) fail("{}: expected a 'test' source (or a model YAML with data.test)", spec_path);
  const YAML::Node src = section["test"];
  if (!src.IsMap() || !src["features"]) fail("{}: the test source needs 'features' (a file path)", s.at(src));
  const std::string format = src["format"] ? s.text(src["format"], "format") : "idx";
  const std::string features = s.text(src["features"], "features");
  const int64_t file_limit = src["limit"] ? s.as<int64_t>(src["limit"], "limit", "an integer") : 0;

  const int64_t keep = limit > 0 ? limit : file_limit;
  int64_t file_samples = -1, file_labels = -1;  // IDX: the files' counts (read up to `keep`)
  TestSet t;
  t.input = input.name;
  std::string labels_file = features;  // csv: the label column is in the features file
  if (section["transforms"]) t.transforms = parse_transforms(s, section["transforms"]);
  try {
    if (format == "csv") {
      auto table = data::read_csv(features, src["label_column"] ? s.as<int64_t>(src["label_column"], "label_column", "an integer") : -1,
                                  src["header"] ? s.as<bool>(src["header"], "header", "true or false") : false);
      t.data = {table.features, table.labels};
    } else if (format == "idx" || format == "npy") {
      if (!src["labels"]) fail("{}: the test source needs 'labels' (a file path)", s.at(src));
      const std::string labels = labels_file = s.text(src["labels"], "labels");
      if (format == "idx") {  // up to the limit only; the counts are the files'
        t.data.features = data::read_idx(features, keep > 0 ? keep : -1, &file_samples);
        t.data.labels = data::read_idx(labels, keep > 0 ? keep : -1, &file_labels);
      } else {
        t.data.features = data::read_npy(features);
        t.data.labels = data::read_npy(labels);
      }
    } else {
      fail("{}: unknown data format '{}' (expected idx, npy or csv)", s.at(src["format"]), format);
    }
  } catch (const Error& e) {
    fail("{} {}: {}", flag, spec_path, e.what());
  }
  data::Dataset& d = t.data;
  const int64_t n = d.features.dim() > 0 ? d.features.shape()[0] : 0;
  const int64_t samples = file_samples >= 0 ? file_samples : n;
  const int64_t labelled = d.labels.dim() != 1 ? -1 : file_labels >= 0 ? file_labels : d.labels.shape()[0];
  if (d.labels.dim() != 1 || labelled != samples || !is_integral(d.labels.dtype()))
    fail("{} {}: {} has {} samples but the labels are {}{}; expected {} integer labels", flag, spec_path, features, samples,
         dtype_name(d.labels.dtype()), d.labels.dim() == 1 ? shape_str({labelled}) : shape_str(d.labels.shape()), samples);
  Shape per_sample(input.type.shape.begin() + 1, input.type.shape.end());
  if (input.type.shape.empty() || shape_numel(per_sample) != (n ? d.features.numel() / n : 0))
    fail("{} {}: samples in {} have {} values, but the model expects {}", flag, spec_path, features, n ? d.features.numel() / n : 0,
         exec::describe_inputs(p));
  if (keep > 0) d = d.first(keep);
  Shape s2 = {d.features.shape()[0]};
  s2.insert(s2.end(), per_sample.begin(), per_sample.end());
  d.features = ops::reshape(d.features, s2);
  d.labels = ops::cast(d.labels, DType::i64);
  check_label_range(p, d.labels, fmt::format("{} {}: {}", flag, spec_path, labels_file));
  return t;
}

}  // namespace pd::tools
