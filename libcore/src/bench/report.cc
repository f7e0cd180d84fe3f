#include "pd/bench/report.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "pd/core/error.h"

namespace pd::bench {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}
const char* unit(const Result& r) { return r.compute_bound ? "GFLOP/s" : "GB/s"; }

}  // namespace

std::string result_key(const Result& r) {
  return fmt::format("{} {} [{} {} {}]", r.op, r.problem, r.backend, r.dtype, r.direction);
}

void print_header(std::FILE* f, const MachineInfo& m, const Peak& p) {
  fmt::print(f, "# {} ({}), {} cores, {} threads, oneDNN {}, {}\n", m.cpu, m.isa, m.cores, m.threads, m.onednn, m.compiler);
  if (!p.device.empty())
    fmt::print(f, "# peak on {}: {:.1f} GFLOP/s {} GEMM (8192^3), {:.1f} GB/s device copy (measured now)\n", p.device,
               p.gemm_gflops, p.gemm_dtype, p.mem_gbps);
  else
    fmt::print(f, "# peak: {:.1f} GFLOP/s FP32 GEMM, {:.1f} GB/s memory ({}{})\n", p.gemm_gflops, p.mem_gbps,
               p.cached ? "cached in " : "measured now, cached in ", p.cache_path);
  fmt::print(f, "{:<18} {:<9} {:<4} {:<3} {:>10} {:>10} {:>6} {:>10} {:<7} {:>6}  {}\n", "op", "backend", "dt", "dir",
             "min ms", "median ms", "reps", "rate", "unit", "%peak", "problem");
}

void print_row(std::FILE* f, const Result& r) {
  // "cache" and "*" are explained under the table (peak_notes).
  const std::string pct = r.in_cache ? "cache" : fmt::format("{:.1f}%{}", r.pct_peak, r.pct_peak > 100 ? "*" : "");
  fmt::print(f, "{:<18} {:<9} {:<4} {:<3} {:>10.4f} {:>10.4f} {:>6} {:>10.2f} {:<7} {:>6}  {}\n", r.op, r.backend,
             r.dtype, r.direction, r.min_ms, r.median_ms, r.reps, r.rate, unit(r), pct, r.problem);
  std::fflush(f);
}

void write_json(std::FILE* f, const MachineInfo& m, const Peak& p, const std::vector<Result>& rows) {
  fmt::print(f, "{{\"format\": \"pd-bench\", \"version\": 1,\n");
  fmt::print(f,
             " \"machine\": {{\"cpu\": \"{}\", \"isa\": \"{}\", \"cores\": {}, \"threads\": {}, \"onednn\": \"{}\", "
             "\"compiler\": \"{}\"}},\n",
             esc(m.cpu), m.isa, m.cores, m.threads, m.onednn, esc(m.compiler));
  fmt::print(f, " \"peak\": {{\"gemm_gflops\": {:.3f}, \"mem_gbps\": {:.3f}}},\n \"results\": [\n", p.gemm_gflops, p.mem_gbps);
  // One result per line, so that diffs of two runs line up.
  for (size_t i = 0; i < rows.size(); ++i) {
    const Result& r = rows[i];
    fmt::print(f,
               "  {{\"op\": \"{}\", \"problem\": \"{}\", \"backend\": \"{}\", \"dtype\": \"{}\", \"direction\": \"{}\", "
               "\"min_ms\": {:.6g}, \"median_ms\": {:.6g}, \"reps\": {}, \"unit\": \"{}\", \"rate\": {:.6g}, "
               "\"pct_peak\": {:.4g}, \"in_cache\": {}}}{}\n",
               r.op, esc(r.problem), r.backend, r.dtype, r.direction, r.min_ms, r.median_ms, r.reps, unit(r), r.rate,
               r.pct_peak, r.in_cache, i + 1 < rows.size() ? "," : "");
  }
  fmt::print(f, " ]}}\n");
}

void write_csv(std::FILE* f, const MachineInfo& m, const std::vector<Result>& rows) {
  fmt::print(f, "op,problem,backend,dtype,direction,min_ms,median_ms,reps,unit,rate,pct_peak,cpu,isa,cores,threads,onednn,compiler\n");
  for (const auto& r : rows)
    fmt::print(f, "{},{},{},{},{},{:.6g},{:.6g},{},{},{:.6g},{:.4g},{},{},{},{},{},{}\n", r.op, csv_field(r.problem),
               r.backend, r.dtype, r.direction, r.min_ms, r.median_ms, r.reps, unit(r), r.rate, r.pct_peak,
               csv_field(m.cpu), m.isa, m.cores, m.threads, m.onednn, csv_field(m.compiler));
}

std::vector<Regression> compare_baseline(const std::string& path, const std::vector<Result>& rows, double threshold,
                                         int* matched) {
  std::ifstream in(path);
  PD_CHECK(in.good(), ErrorCode::kIO, "--baseline {}: cannot read the file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  PD_CHECK(text.find("\"format\": \"pd-bench\"") != std::string::npos, ErrorCode::kParse,
           "--baseline {}: not a pd-bench JSON file (write one with --format json)", path);
  // Each result object is flat, so a per-object pattern reads it without a JSON library.
  std::regex obj(R"re(\{"op": "([^"]*)", "problem": "((?:[^"\\]|\\.)*)", "backend": "([^"]*)", "dtype": "([^"]*)", "direction": "([^"]*)", "min_ms": ([0-9.eE+-]+))re");
  std::map<std::string, double> base;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), obj); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    Result r;
    r.op = m[1];
    r.problem = std::regex_replace(m[2].str(), std::regex(R"(\\(.))"), "$1");
    r.backend = m[3];
    r.dtype = m[4];
    r.direction = m[5];
    base[result_key(r)] = std::stod(m[6]);
  }
  PD_CHECK(!base.empty(), ErrorCode::kParse, "--baseline {}: no results in the file", path);
  std::vector<Regression> out;
  *matched = 0;
  for (const auto& r : rows) {
    auto it = base.find(result_key(r));
    if (it == base.end()) continue;
    ++*matched;
    if (r.min_ms > it->second * (1 + threshold)) out.push_back({result_key(r), it->second, r.min_ms});
  }
  return out;
}

void print_peak_notes(std::FILE* f, const Peak& p, const std::vector<Result>& rows) {
  bool cache = false, above = false;
  for (const Result& r : rows) cache |= r.in_cache, above |= r.pct_peak > 100;
  if (cache)
    fmt::print(f, "# cache: the problem's bytes fit in the {:.0f} MiB CPU cache, so its rate is a cache rate and not a share "
                  "of the memory peak (measured beyond the caches)\n", p.cache_bytes / 1048576.0);
  if (above)
    fmt::print(f, "# *: above the probed peak: the probe ran before, under other load, or with other threads; --reprobe "
                  "measures it again\n");
}

std::string machine_summary(const MachineInfo& m) {
  return fmt::format("{} ({}), {} threads, oneDNN {}, {}", m.cpu, m.isa, m.threads, m.onednn, m.compiler);
}

std::string baseline_machine(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::smatch m;
  static const std::regex machine(
      R"re("machine": \{"cpu": "((?:[^"\\]|\\.)*)", "isa": "([^"]*)", "cores": [0-9]+, "threads": ([0-9]+), "onednn": "([^"]*)", "compiler": "((?:[^"\\]|\\.)*)"\})re");
  if (!std::regex_search(text, m, machine)) return "";
  MachineInfo b;
  b.cpu = std::regex_replace(m[1].str(), std::regex(R"(\\(.))"), "$1");
  b.isa = m[2];
  b.threads = std::stoi(m[3]);
  b.onednn = m[4];
  b.compiler = std::regex_replace(m[5].str(), std::regex(R"(\\(.))"), "$1");
  return machine_summary(b);
}

}  // namespace pd::bench
