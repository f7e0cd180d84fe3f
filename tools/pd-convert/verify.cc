#include "verify.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "pd/data/readers.h"
#include "pd/io/tensor_file.h"

namespace pd::converter {
namespace {

namespace fs = std::filesystem;

// Each runner reads the manifest of input files (inputs.txt), runs the model, and writes out_K.npy and a
// manifest of output names (outputs.txt). Exit 3 when its runtime (or numpy) cannot be imported.
constexpr const char* kManifestIo = R"PY(
import sys, os
def read_feeds(d):
    import numpy as np
    feeds = {}
    with open(os.path.join(d, "inputs.txt")) as f:
        for line in f.read().splitlines():
            name, path = line.split("\t")
            feeds[name] = np.load(path)
    return feeds
def write_outputs(d, named):
    import numpy as np
    with open(os.path.join(d, "outputs.txt"), "w") as f:
        for k, (name, v) in enumerate(named):
            np.save(os.path.join(d, "out_%d.npy" % k), np.ascontiguousarray(v))
            f.write(name + "\n")
)PY";

constexpr const char* kOnnxRunner = R"PY(
try:
    import numpy as np
    import onnxruntime as ort
except Exception as e:
    print("cannot import onnxruntime/numpy: %s" % e, file=sys.stderr)
    sys.exit(3)
model, d = sys.argv[1], sys.argv[2]
so = ort.SessionOptions()
so.intra_op_num_threads = 2
sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
outs = sess.run(None, read_feeds(d))
write_outputs(d, [(o.name, v) for o, v in zip(sess.get_outputs(), outs)])
)PY";

constexpr const char* kPaddleRunner = R"PY(
try:
    import numpy as np
    import paddle
    import paddle.inference as pi
except Exception as e:
    print("cannot import paddle/numpy: %s" % e, file=sys.stderr)
    sys.exit(3)
model, d, params = sys.argv[1], sys.argv[2], sys.argv[3]
config = pi.Config(model, params)
config.disable_gpu()
# Paddle's own CPU kernels, the numbers paddle's dygraph model gives: with its oneDNN kernels (the
# default), paddle.inference 2.6 is 1.8 off its own output on the decoder fixture's interpolations, and
# 3.3 refuses them (ConvertPirAttribute2RuntimeAttribute on their scale attribute).
config.disable_mkldnn()
config.set_cpu_math_library_num_threads(2)
config.disable_glog_info()
pred = pi.create_predictor(config)
feeds = read_feeds(d)
for name in pred.get_input_names():
    pred.get_input_handle(name).copy_from_cpu(feeds[name])
pred.run()
write_outputs(d, [(n, pred.get_output_handle(n).copy_to_cpu()) for n in pred.get_output_names()])
)PY";

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

}  // namespace

bool run_source_runtime(const SourceRuntime& rt, const std::map<std::string, Tensor>& inputs,
                        std::vector<std::pair<std::string, Tensor>>* outputs, std::string* why) {
  const bool paddle = rt.kind == SourceRuntime::Paddle;
  const char* name = paddle ? "paddle" : "onnxruntime";
  const fs::path dir = fs::temp_directory_path() / fmt::format("pd-convert-verify-{}", ::getpid());
  fs::create_directories(dir);
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  std::string manifest;
  int k = 0;
  for (const auto& [in_name, t] : inputs) {
    const std::string file = (dir / fmt::format("in_{}.npy", k++)).string();
    data::write_npy(file, t);
    manifest += in_name + "\t" + file + "\n";
  }
  io::write_file_atomic((dir / "inputs.txt").string(), manifest);
  io::write_file_atomic((dir / "runner.py").string(), std::string(kManifestIo) + (paddle ? kPaddleRunner : kOnnxRunner));
  const std::string log = (dir / "log.txt").string();
  std::string cmd = fmt::format("{} {} {} {}", quote(rt.python), quote((dir / "runner.py").string()),
                                quote(fs::absolute(rt.model_path).string()), quote(dir.string()));
  if (paddle) cmd += " " + quote(fs::absolute(rt.params_path).string());
  cmd += " > " + quote(log) + " 2>&1";
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::string text;
  if (fs::exists(log)) text = io::read_file_bytes(log);
  if (code == 127 || code == 3) {
    *why = code == 127 ? fmt::format("'{}' was not found", rt.python)
                       : fmt::format("{} is not importable by '{}' (pip install {} numpy, or give --python)", name,
                                     rt.python, paddle ? "paddlepaddle" : "onnxruntime");
    return false;
  }
  PD_CHECK(code == 0, ErrorCode::kInternal, "{} failed on {} (exit {}):\n{}", name, rt.model_path, code, text);
  std::ifstream names(dir / "outputs.txt");
  std::string out_name;
  k = 0;
  while (std::getline(names, out_name))
    outputs->emplace_back(out_name, data::read_npy((dir / fmt::format("out_{}.npy", k++)).string()));
  return true;
}

std::vector<OutputDiff> compare_outputs(const ir::Program& p, const std::vector<Tensor>& ours,
                                        const std::vector<std::pair<std::string, Tensor>>& reference, double atol,
                                        double rtol) {
  std::vector<OutputDiff> out;
  for (size_t i = 0; i < ours.size(); ++i) {
    OutputDiff d;
    d.name = p.output_names()[i];
    const Tensor* ref = nullptr;
    for (const auto& [n, t] : reference)
      if (n == d.name) ref = &t;
    if (!ref && reference.size() == ours.size()) ref = &reference[i].second;  // renamed: match by position
    if (!ref) {
      d.shape_ok = d.ok = false;
      d.note = "no reference output of this name";
      out.push_back(d);
      continue;
    }
    if (ref->shape() != ours[i].shape()) {
      d.shape_ok = d.ok = false;
      d.note = fmt::format("shape {} here, {} in the reference", shape_str(ours[i].shape()), shape_str(ref->shape()));
      out.push_back(d);
      continue;
    }
    const std::vector<double> a = ours[i].to_vector<double>(), b = ref->to_vector<double>();
    for (double v : b)
      if (std::isfinite(v)) d.largest = std::max(d.largest, std::abs(v));
    // An element that sums to near zero from terms of the output's scale carries f32 rounding of that
    // scale (Inception-v3 with random weights: logits of 3e13, elements near 0 off by 3e7), so the
    // relative part is measured against at least kScaleFloor of the output's largest magnitude.
    const double floor = kScaleFloor * d.largest;
    for (size_t k = 0; k < a.size(); ++k) {
      const double diff = std::abs(a[k] - b[k]);
      if (std::isnan(a[k]) != std::isnan(b[k])) d.max_abs = INFINITY, d.ok = false;
      if (std::isnan(diff)) continue;
      d.ok = d.ok && diff <= atol + rtol * std::max(std::abs(b[k]), floor);
      d.max_abs = std::max(d.max_abs, diff);
      d.max_rel = std::max(d.max_rel, diff / (std::abs(b[k]) + 1e-6));
    }
    if (ours[i].dim() == 2 && is_floating(ours[i].dtype()) && ours[i].shape()[1] > 1) {
      const int64_t rows = ours[i].shape()[0], cols = ours[i].shape()[1];
      d.rows = rows;
      d.argmax_agree = 0;
      for (int64_t r = 0; r < rows; ++r) {
        auto am = [&](const std::vector<double>& v) {
          return std::max_element(v.begin() + r * cols, v.begin() + (r + 1) * cols) - v.begin();
        };
        d.argmax_agree += am(a) == am(b);
      }
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace pd::converter
