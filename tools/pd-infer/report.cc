#include "report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include "pd/core/tensor_inl.h"

namespace pd::infer {
namespace {

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
    else out += c;
  }
  return out + "\"";
}

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }

}  // namespace

Latency summarize(std::vector<double> ms) {
  if (ms.empty()) return {};
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (double v : ms) sum += v;
  return {ms.front(), percentile(ms, 50), percentile(ms, 90), percentile(ms, 99), sum / static_cast<double>(ms.size())};
}

Comparison compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  Comparison c;
  if (got.shape() != want.shape()) {
    c.ok = false;
    c.shape_differs = true;
    return c;
  }
  // A NaN tolerance makes every comparison false, so nothing would ever count as a mismatch.
  PD_CHECK(std::isfinite(rtol) && rtol >= 0 && std::isfinite(atol) && atol >= 0, pd::ErrorCode::kInvalidArgument,
           "compare: tolerances must be finite and >= 0, got rtol {} and atol {}", rtol, atol);
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  double worst = -INFINITY, largest = -1;
  size_t at_worst = 0, at_largest = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    double err = std::abs(g[i] - w[i]);
    if (std::isnan(err)) err = INFINITY;  // NaN against a number: the largest error there is
    const double excess = err - (atol + rtol * std::abs(w[i]));
    if (!(excess <= 0)) ++c.mismatches;
    if (err > largest) largest = err, at_largest = i;
    if (w[i] != 0) c.max_rel_err = std::max(c.max_rel_err, err / std::abs(w[i]));
    if (excess > worst) worst = excess, at_worst = i;
  }
  c.ok = c.mismatches == 0;
  if (largest >= 0) {
    c.max_abs_err = std::isnan(g[at_largest] - w[at_largest]) ? NAN : largest;
    c.index = unravel(static_cast<int64_t>(at_largest), got.shape());
    c.got = g[at_largest], c.want = w[at_largest];
    c.worst_index = unravel(static_cast<int64_t>(at_worst), got.shape());
    c.worst_got = g[at_worst], c.worst_want = w[at_worst];
  }
  return c;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

std::string text_report(const Report& r) {
  std::string s = fmt::format("model      {}\ninputs     {} (batch {}, {} threads)\n", r.model, r.source, r.batch,
                              r.threads > 0 ? fmt::to_string(r.threads) : "default");
  s += fmt::format("target     {}, {}: {} ops in the file, {} run\n", r.target, r.lowering, r.source_ops, r.ops);
  s += fmt::format("runs       {} timed after {} warm-up\n", r.runs, r.warmup);
  const Latency& l = r.latency;
  s += fmt::format("latency    min {:.3f} ms  p50 {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms  mean {:.3f} ms\n", l.min, l.p50, l.p90,
                   l.p99, l.mean);
  s += fmt::format("throughput {:.1f} samples/s\n", r.throughput);
  s += fmt::format("memory     peak RSS {:.1f} MiB; executor peak {:.1f} KiB of {:.1f} KiB intermediates ({} ops)\n",
                   r.peak_rss_mib, r.exec_peak_bytes / 1024.0, r.exec_total_bytes / 1024.0, r.ops);
  if (r.accuracy) s += fmt::format("accuracy   {:.4f} ({} samples)\n", *r.accuracy, r.samples);
  if (!r.profile.empty()) {
    double sum = 0;
    for (const OpProfile& p : r.profile) sum += p.total_ms;
    s += fmt::format("profile    {} runs, per op (exclusive time, timer overhead subtracted):\n", r.profile_runs);
    s += fmt::format("  {:<24} {:>7} {:>12} {:>7}\n", "op", "calls/run", "us/run", "share");
    for (const OpProfile& p : r.profile)
      s += fmt::format("  {:<24} {:>9.0f} {:>12.2f} {:>6.1f}%\n", p.op, p.calls / r.profile_runs,
                       1000.0 * p.total_ms / r.profile_runs, sum > 0 ? 100.0 * p.total_ms / sum : 0.0);
    s += fmt::format("  OpenMP's team ran {:.1f} primitives a run{}\n", r.openmp_team_uses,
                     r.openmp_team_uses > 0 ? " (beside a busy process each may wait out its time slice)" : "");
    // The slowest ops one by one (all of them with --json): where several of one type differ.
    constexpr size_t kShownNodes = 15;
    s += fmt::format("  slowest ops of {} (median wall time, inclusive):\n", r.nodes.size());
    s += fmt::format("  {:>5}  {:<24} {:>10}  {}\n", "#", "op", "us", "result");
    for (size_t i = 0; i < r.nodes.size() && i < kShownNodes; ++i)
      s += fmt::format("  {:>5}  {:<24} {:>10.2f}  {}\n", r.nodes[i].index, r.nodes[i].op, r.nodes[i].p50_us, r.nodes[i].result);
  }
  if (r.comparison) {
    const Comparison& c = *r.comparison;
    if (c.shape_differs) {
      s += fmt::format("compare    {}: MISMATCH (shapes differ)\n", r.compare_file);
    } else {
      s += fmt::format("compare    {}: {} (max abs error {:.3g} at [{}]: got {:.7g}, want {:.7g}; {} elements out of tolerance)\n",
                       r.compare_file, c.ok ? "ok" : "MISMATCH", c.max_abs_err, fmt::join(c.index, ", "), c.got, c.want,
                       c.mismatches);
      if (!c.ok && c.worst_index != c.index)
        s += fmt::format("           furthest beyond its tolerance: [{}]: got {:.7g}, want {:.7g}\n", fmt::join(c.worst_index, ", "),
                         c.worst_got, c.worst_want);
    }
  }
  return s;
}

std::string json_report(const Report& r) {
  const Latency& l = r.latency;
  std::string s = fmt::format(
      "{{\"model\": {}, \"inputs\": {}, \"batch\": {}, \"threads\": {}, \"warmup\": {}, \"runs\": {}, \"samples\": {}, "
      "\"latency_ms\": {{\"min\": {}, \"p50\": {}, \"p90\": {}, \"p99\": {}, \"mean\": {}}}, \"throughput\": {}, "
      "\"peak_rss_mib\": {}, \"exec_peak_bytes\": {}, \"exec_total_bytes\": {}, \"ops\": {}, \"source_ops\": {}, "
      "\"target\": {}, \"lowering\": {}",
      json_str(r.model), json_str(r.source), r.batch, r.threads, r.warmup, r.runs, r.samples, num(l.min), num(l.p50), num(l.p90),
      num(l.p99), num(l.mean), num(r.throughput), num(r.peak_rss_mib), r.exec_peak_bytes, r.exec_total_bytes, r.ops, r.source_ops,
      json_str(r.target), json_str(r.lowering));
  if (r.accuracy) s += fmt::format(", \"accuracy\": {}", num(*r.accuracy));
  if (!r.profile.empty()) {
    s += fmt::format(", \"profile_runs\": {}, \"openmp_team_uses\": {}, \"profile\": [", r.profile_runs, num(r.openmp_team_uses));
    for (size_t i = 0; i < r.profile.size(); ++i)
      s += fmt::format("{}{{\"op\": {}, \"calls\": {}, \"total_ms\": {}}}", i ? ", " : "", json_str(r.profile[i].op),
                       r.profile[i].calls, num(r.profile[i].total_ms));
    s += "], \"nodes\": [";
    for (size_t i = 0; i < r.nodes.size(); ++i)
      s += fmt::format("{}{{\"index\": {}, \"op\": {}, \"result\": {}, \"p50_us\": {}}}", i ? ", " : "", r.nodes[i].index,
                       json_str(r.nodes[i].op), json_str(r.nodes[i].result), num(r.nodes[i].p50_us));
    s += "]";
  }
  if (r.comparison) {
    const Comparison& c = *r.comparison;
    s += fmt::format(", \"compare\": {{\"file\": {}, \"ok\": {}, \"shape_differs\": {}, \"max_abs_err\": {}, \"max_rel_err\": {}, "
                     "\"index\": [{}], \"worst_index\": [{}], \"mismatches\": {}}}",
                     json_str(r.compare_file), c.ok, c.shape_differs, num(c.max_abs_err), num(c.max_rel_err),
                     fmt::join(c.index, ", "), fmt::join(c.worst_index, ", "), c.mismatches);
  }
  return s + "}";
}

}  // namespace pd::infer
