#include "run_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace pd::train {
namespace {

double field(const std::string& line, const std::string& key) {
  size_t p = line.find("\"" + key + "\":");
  return p == std::string::npos ? 0.0 : std::strtod(line.c_str() + p + key.size() + 3, nullptr);
}

std::string polyline(const std::vector<EpochMetrics>& h, double (*get)(const EpochMetrics&), double lo, double hi, int x0,
                     int w, int y0, int ht) {
  std::string pts;
  for (size_t i = 0; i < h.size(); ++i) {
    double x = x0 + (h.size() == 1 ? w / 2.0 : w * static_cast<double>(i) / static_cast<double>(h.size() - 1));
    double v = std::clamp((get(h[i]) - lo) / (hi - lo > 0 ? hi - lo : 1), 0.0, 1.0);
    pts += fmt::format("{:.1f},{:.1f} ", x, y0 + ht - v * ht);
  }
  return pts;
}

}  // namespace

std::string metrics_json(const EpochMetrics& m) {
  return fmt::format(
      "{{\"epoch\": {}, \"train_loss\": {:.6f}, \"test_loss\": {:.6f}, \"test_acc\": {:.5f}, \"samples_per_s\": {:.1f}, "
      "\"seconds\": {:.3f}, \"lr\": {:.6g}, \"steps\": {}}}",
      m.epoch, m.train_loss, m.test_loss, m.test_acc, m.samples_per_s, m.seconds, m.lr, m.steps);
}

std::vector<EpochMetrics> read_metrics(const std::string& path) {
  std::vector<EpochMetrics> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"epoch\"") == std::string::npos) continue;
    EpochMetrics m;
    m.epoch = static_cast<int64_t>(field(line, "epoch"));
    m.train_loss = field(line, "train_loss");
    m.test_loss = field(line, "test_loss");
    m.test_acc = field(line, "test_acc");
    m.samples_per_s = field(line, "samples_per_s");
    m.seconds = field(line, "seconds");
    m.lr = field(line, "lr");
    m.steps = static_cast<int64_t>(field(line, "steps"));
    out.push_back(m);
  }
  return out;
}

std::string metrics_svg(const std::vector<EpochMetrics>& h, const std::string& title) {
  const int W = 640, H = 360, x0 = 60, y0 = 40, w = 520, ht = 260;
  double lmax = 0;
  for (const auto& m : h) lmax = std::max({lmax, m.train_loss, m.test_loss});
  if (lmax <= 0) lmax = 1;
  std::ostringstream s;
  s << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  s << fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n", W, H, x0, title);
  s << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", x0, y0, w, ht);
  for (int i = 0; i <= 4; ++i) {
    double y = y0 + ht - ht * i / 4.0;
    s << fmt::format("<text x=\"{}\" y=\"{:.0f}\" text-anchor=\"end\">{:.2f}</text>", x0 - 6, y + 4, lmax * i / 4);
    s << fmt::format("<text x=\"{}\" y=\"{:.0f}\">{:.0f}%</text>\n", x0 + w + 6, y + 4, 25.0 * i);
  }
  for (size_t i = 0; i < h.size(); ++i) {
    double x = x0 + (h.size() == 1 ? w / 2.0 : w * static_cast<double>(i) / static_cast<double>(h.size() - 1));
    s << fmt::format("<text x=\"{:.0f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", x, y0 + ht + 16, h[i].epoch);
  }
  s << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">epoch</text>\n", x0 + w / 2, y0 + ht + 34);
  auto line = [&](double (*get)(const EpochMetrics&), double hi, const char* color, const char* label, int k) {
    s << fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color,
                     polyline(h, get, 0, hi, x0, w, y0, ht));
    s << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"3\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                     x0 + 10 + 130 * k, y0 + 12, color, x0 + 26 + 130 * k, y0 + 17, label);
  };
  line([](const EpochMetrics& m) { return m.train_loss; }, lmax, "#1f77b4", "train loss", 0);
  line([](const EpochMetrics& m) { return m.test_loss; }, lmax, "#ff7f0e", "test loss", 1);
  line([](const EpochMetrics& m) { return m.test_acc; }, 1.0, "#2ca02c", "test accuracy", 2);
  s << "</svg>\n";
  return s.str();
}

}  // namespace pd::train
