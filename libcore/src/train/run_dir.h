// The run directory's ownership rules: a run never silently replaces another, two pd-train processes
// never share one, and a start that fails leaves nothing behind.
//
//   RunDir dir = RunDir::claim(options.out_dir, spec.name, RunDir::Mode::fresh);  // refuses a used DIR
//   ... load data, build the network (a failure here removes a DIR that claim() created) ...
//   dir.commit();  // from here on the directory is the run's
#pragma once
#include <string>

namespace pd::train {

class RunDir {
 public:
  enum class Mode { fresh, resume, overwrite };

  // Without an explicit directory a fresh run takes runs/NAME, or runs/NAME-2, -3... when that one is
  // already used; resume takes runs/NAME. Takes an exclusive lock on DIR/.pd-train.lock (released by
  // the kernel when the process ends, however it ends).
  static RunDir claim(const std::string& dir, const std::string& name, Mode mode);

  RunDir(RunDir&& other) noexcept;
  RunDir& operator=(RunDir&&) = delete;
  ~RunDir();

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Removes the files of an earlier run (overwrite mode) and temporaries left by a killed writer.
  void remove_run_files() const;
  void remove_stale_temporaries() const;
  // Keeps the directory even if the run fails from here on.
  void commit() { committed_ = true; }

 private:
  RunDir(std::string path, bool created, int lock_fd) : path_(std::move(path)), created_(created), lock_fd_(lock_fd) {}
  std::string path_;
  bool created_ = false, committed_ = false;
  int lock_fd_ = -1;
};

}  // namespace pd::train
