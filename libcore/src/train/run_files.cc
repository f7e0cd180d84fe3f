#include "run_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace pd::train {
namespace {

double field(const std::string& line, const std::string& key) {
  size_t p = line.find("\"" + key + "\":");
  if (p == std::string::npos) return 0.0;
  const char* v = line.c_str() + p + key.size() + 3;
  while (*v == ' ') ++v;
  return std::strncmp(v, "null", 4) == 0 ? std::nan("") : std::strtod(v, nullptr);
}

// JSON has no NaN or Infinity: a non-finite value is written as null.
std::string number(double v, const char* spec) { return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : "null"; }

struct Axis {
  double lo, hi;
  double y(double v, int y0, int ht) const { return y0 + ht - std::clamp((v - lo) / (hi - lo), 0.0, 1.0) * ht; }
};

// An axis over the finite values, widened to round-ish ticks so that a change of a few percent shows.
Axis fit_axis(std::vector<double> v, double floor_lo, double ceil_hi) {
  std::erase_if(v, [](double x) { return !std::isfinite(x); });
  if (v.empty()) return {floor_lo, std::min(ceil_hi, floor_lo + 1)};
  auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  double pad = std::max((*mx - *mn) * 0.1, std::max(std::abs(*mx), 1e-6) * 0.02);
  return {std::max(floor_lo, *mn - pad), std::min(ceil_hi, *mx + pad)};
}

}  // namespace

std::string metrics_json(const EpochMetrics& m) {
  const std::string scaling =
      m.loss_scale > 0 ? fmt::format(", \"loss_scale\": {}, \"skipped_steps\": {}", m.loss_scale, m.skipped_steps) : "";
  return fmt::format(
      "{{\"epoch\": {}, \"train_loss\": {}, \"test_loss\": {}, \"test_acc\": {}, \"samples_per_s\": {}, "
      "\"seconds\": {}, \"lr\": {}, \"steps\": {}{}}}",
      m.epoch, number(m.train_loss, "{:.6f}"), number(m.test_loss, "{:.6f}"), number(m.test_acc, "{:.5f}"),
      number(m.samples_per_s, "{:.1f}"), number(m.seconds, "{:.3f}"), number(m.lr, "{:.6g}"), m.steps, scaling);
}

std::vector<EpochMetrics> read_metrics(const std::string& path) {
  std::vector<EpochMetrics> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    // Only whole objects: a line cut short by a crash is not a record.
    if (line.find("\"epoch\"") == std::string::npos || line.empty() || line.back() != '}') continue;
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
  // Two panels side by side: losses (left) and test accuracy (right), each on its own fitted axis.
  const int W = 760, H = 380, y0 = 50, ht = 260, w = 290, left[2] = {70, 440};
  std::vector<double> losses, accs;
  for (const auto& m : h) {
    losses.insert(losses.end(), {m.train_loss, m.test_loss});
    accs.push_back(m.test_acc * 100);
  }
  const Axis axes[2] = {fit_axis(losses, 0, 1e300), fit_axis(accs, 0, 100)};
  const int64_t first = h.empty() ? 1 : h.front().epoch, last = h.empty() ? 1 : h.back().epoch;
  auto x_of = [&](const int p, int64_t epoch) {
    return left[p] + (last == first ? w / 2.0 : w * static_cast<double>(epoch - first) / static_cast<double>(last - first));
  };
  std::ostringstream s;
  s << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  s << fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n<text x=\"{}\" y=\"24\" font-size=\"15\">{}</text>\n", W, H,
                   left[0], title);
  const char* y_titles[2] = {"loss", "test accuracy (%)"};
  for (int p = 0; p < 2; ++p) {
    s << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", left[p], y0, w, ht);
    for (int i = 0; i <= 4; ++i) {
      const double v = axes[p].lo + (axes[p].hi - axes[p].lo) * i / 4;
      const double y = axes[p].y(v, y0, ht);
      s << fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>", left[p] + 1, left[p] + w - 1, y, y);
      s << fmt::format("<text x=\"{}\" y=\"{:.0f}\" text-anchor=\"end\">{}</text>\n", left[p] - 6, y + 4,
                       p == 0 ? fmt::format("{:.3g}", v) : fmt::format("{:.1f}", v));
    }
    s << fmt::format("<text transform=\"translate({},{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", left[p] - 50,
                     y0 + ht / 2, y_titles[p]);
    const int64_t stride = std::max<int64_t>(1, static_cast<int64_t>(h.size()) / 10);  // at most ~10 epoch labels
    for (size_t i = 0; i < h.size(); i += static_cast<size_t>(stride))
      s << fmt::format("<text x=\"{:.0f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", x_of(p, h[i].epoch), y0 + ht + 16, h[i].epoch);
    s << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">epoch</text>\n", left[p] + w / 2, y0 + ht + 34);
  }
  // A series as a line plus a dot per epoch, so that a one-epoch run still shows its value.
  auto series = [&](int p, double (*get)(const EpochMetrics&), const char* color, const char* label, int k) {
    std::string pts;
    for (const auto& m : h) {
      const double v = get(m);
      if (!std::isfinite(v)) continue;
      const double x = x_of(p, m.epoch), y = axes[p].y(v, y0, ht);
      pts += fmt::format("{:.1f},{:.1f} ", x, y);
      s << fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>", x, y, color);
    }
    s << fmt::format("\n<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, pts);
    // Legends sit under the panels, never over a curve.
    const int lx = left[p] + 120 * k, ly = y0 + ht + 52;
    s << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"3\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n", lx, ly - 4,
                     color, lx + 20, ly, label);
  };
  series(0, [](const EpochMetrics& m) { return m.train_loss; }, "#1f77b4", "train loss", 0);
  series(0, [](const EpochMetrics& m) { return m.test_loss; }, "#ff7f0e", "test loss", 1);
  series(1, [](const EpochMetrics& m) { return m.test_acc * 100; }, "#2ca02c", "test accuracy", 0);
  s << "</svg>\n";
  return s.str();
}

}  // namespace pd::train
