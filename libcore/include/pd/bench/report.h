// pd-bench output: a human table, JSON or CSV with the machine they were measured on, and the
// comparison against a baseline JSON written earlier.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "pd/bench/machine.h"
#include "pd/bench/runner.h"

namespace pd::bench {

void print_header(std::FILE* f, const MachineInfo& m, const Peak& p);  // for the human table
void print_row(std::FILE* f, const Result& r);                          // one table row, printed as it is measured
void print_peak_notes(std::FILE* f, const Peak& p, const std::vector<Result>& rows);  // what "cache" and "*" mean
void write_json(std::FILE* f, const MachineInfo& m, const Peak& p, const std::vector<Result>& rows);
void write_csv(std::FILE* f, const MachineInfo& m, const std::vector<Result>& rows);

// Identity of a row across runs.
std::string result_key(const Result& r);

struct Regression {
  std::string key;
  double base_ms, now_ms;  // min times
};
// Reads a JSON file pd-bench wrote (throws pd::Error kParse/kIO otherwise); rows slower than the
// baseline by more than `threshold` (0.10 = 10%) on min time.
std::vector<Regression> compare_baseline(const std::string& path, const std::vector<Result>& rows, double threshold,
                                         int* matched);

// "Intel Xeon ... (avx512), 16 threads, oneDNN 2.7.3, GCC 12.2.0": what a run's times depend on.
std::string machine_summary(const MachineInfo& m);
// The machine a baseline JSON was measured on, as machine_summary writes it ("" when the file has none).
std::string baseline_machine(const std::string& path);

}  // namespace pd::bench
