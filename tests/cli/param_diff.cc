// param_diff A.pdparams B.pdparams [RTOL]: compares two pd-train model files parameter by parameter:
// the relative difference of each tensor, ||a - b|| / ||a|| (L2), and the worst single element. Exit 1
// when a tensor's relative difference exceeds RTOL (default 1e-5), or names or shapes differ.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "pd/io/tensor_file.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: param_diff A.pdparams B.pdparams [RTOL]\n");
    return 2;
  }
  const double rtol = argc > 3 ? std::atof(argv[3]) : 1e-5;
  auto a = pd::io::load_tensors(argv[1]).tensors;
  auto b = pd::io::load_tensors(argv[2]).tensors;
  if (a.size() != b.size()) {
    fmt::print("different parameter sets: {} vs {}\n", a.size(), b.size());
    return 1;
  }
  double worst = 0, worst_tensor = 0;
  std::string where = "-", which = "-";
  for (const auto& [name, ta] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.shape() != ta.shape() || ta.dtype() != pd::DType::f32) {
      if (it != b.end() && ta.dtype() != pd::DType::f32 && it->second.shape() == ta.shape()) continue;  // counters
      fmt::print("{}: missing or of another shape in {}\n", name, argv[2]);
      return 1;
    }
    const float* x = ta.contiguous().data<float>();
    const pd::Tensor cb = it->second.contiguous();
    const float* y = cb.data<float>();
    double diff2 = 0, norm2 = 0;
    for (int64_t i = 0; i < ta.numel(); ++i) {
      diff2 += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
      norm2 += double(x[i]) * x[i];
      const double d = std::fabs(double(x[i]) - y[i]) / std::max({std::fabs(double(x[i])), std::fabs(double(y[i])), 1e-3});
      if (!(d <= worst)) {
        worst = d;
        where = fmt::format("{}[{}]: {} vs {}", name, i, x[i], y[i]);
      }
    }
    const double rel = std::sqrt(diff2 / std::max(norm2, 1e-30));
    if (!(rel <= worst_tensor)) worst_tensor = rel, which = name;
  }
  fmt::print("max relative difference of a tensor {:.3g} ({}); worst element {:.3g} at {}\n", worst_tensor, which, worst, where);
  return worst_tensor <= rtol ? 0 : 1;
}
