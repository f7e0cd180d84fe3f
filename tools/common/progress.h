// A one-line progress counter on stderr ("pd-quant: calibrating 12/40"), drawn only when stderr is a
// terminal so that logs and pipes stay clean; the line is cleared when the counter goes away.
#pragma once
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace pd::tools {

class Progress {
 public:
  Progress(std::string label, int64_t total) : label_(std::move(label)), total_(total), tty_(isatty(fileno(stderr)) != 0) {
    draw();
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() {
    if (tty_) fmt::print(stderr, "\r\033[K");
  }
  void step() {
    ++done_;
    draw();
  }

 private:
  void draw() const {
    if (tty_) fmt::print(stderr, "\r{} {}/{}\033[K", label_, done_, total_);
  }
  std::string label_;
  int64_t total_ = 0, done_ = 0;
  bool tty_ = false;
};

}  // namespace pd::tools
