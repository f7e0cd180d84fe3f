#include "run_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "pd/core/error.h"

namespace pd::train {
namespace fs = std::filesystem;
namespace {

// Every file a run writes; a directory holding any of them belongs to a run.
constexpr const char* kRunFiles[] = {"checkpoint.pdckpt", "metrics.jsonl", "plot.svg",       "config.yaml",
                                     "model.pdparams",    "model.pdmodel", "model.pdiparams"};
constexpr const char* kLockFile = ".pd-train.lock";

std::vector<std::string> run_files_in(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const char* f : kRunFiles)
    if (fs::exists(dir + "/" + f, ec)) found.push_back(f);
  return found;
}

std::string default_dir(const std::string& name, RunDir::Mode mode) {
  const std::string base = "runs/" + name;
  if (mode != RunDir::Mode::fresh || run_files_in(base).empty()) return base;
  for (int i = 2;; ++i)
    if (const std::string p = base + "-" + std::to_string(i); run_files_in(p).empty()) return p;
}

// The pid a lock holder wrote into the lock file, for the message; 0 if unreadable.
long lock_holder(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

}  // namespace

RunDir RunDir::claim(const std::string& dir, const std::string& name, Mode mode) {
  const std::string path = dir.empty() ? default_dir(name, mode) : dir;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  PD_CHECK(!exists || fs::is_directory(path, ec), ErrorCode::kInvalidArgument,
           "{}: exists and is not a directory; choose another --out", path);
  PD_CHECK(exists || mode != Mode::resume, ErrorCode::kInvalidArgument,
           "{}: there is no run to resume there (the directory does not exist)", path);
  bool created = false;
  if (!exists) {
    created = fs::create_directories(path, ec);
    PD_CHECK(!ec, ErrorCode::kIO, "{}: cannot create the run directory: {}", path, ec.message());
  }
  const std::string lock_path = path + "/" + kLockFile;
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  RunDir claimed(path, created, fd);  // from here its destructor undoes what this did
  PD_CHECK(fd >= 0, ErrorCode::kIO, "{}: cannot create the lock file: {}", lock_path, std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const long pid = lock_holder(fd);
    raise(ErrorCode::kInvalidArgument, "{}: in use by another pd-train{}; wait for it to finish, or choose another --out",
          path, pid > 0 ? fmt::format(" (pid {})", pid) : "");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid only improves another process's message; the lock itself holds.
  }
  if (mode == Mode::fresh) {
    const auto found = run_files_in(path);
    PD_CHECK(found.empty(), ErrorCode::kInvalidArgument,
             "{}: already holds a run ({}); continue it with --resume, replace it with --overwrite, or choose another --out",
             path, fmt::join(found, ", "));
  }
  return claimed;
}

RunDir::RunDir(RunDir&& o) noexcept
    : path_(std::move(o.path_)), created_(o.created_), committed_(o.committed_), lock_fd_(o.lock_fd_) {
  o.lock_fd_ = -1;
  o.created_ = false;
}

RunDir::~RunDir() {
  if (lock_fd_ < 0 && !created_) return;
  // A directory this start created and never committed goes again, so a failed start leaves nothing.
  std::error_code ec;
  if (created_ && !committed_) fs::remove(path_ + "/" + kLockFile, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (created_ && !committed_) fs::remove(path_, ec);  // only if empty: never takes anything else with it
}

void RunDir::remove_run_files() const {
  for (const char* f : kRunFiles) {
    std::error_code ec;
    fs::remove(file(f), ec);
    PD_CHECK(!ec, ErrorCode::kIO, "{}: cannot remove it to start over: {}", file(f), ec.message());
  }
}

void RunDir::remove_stale_temporaries() const {
  // Writers' temporaries are NAME.tmp.PID.N and a model pair's backup NAME.old.PID.N; under our lock no
  // live writer owns one. (A pair's NAME.pending stays: loading the pair may need it, pd/io/file_pair.h.)
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path_, ec)) {
    const std::string n = e.path().filename().string();
    for (const char* f : kRunFiles)
      if (n.rfind(std::string(f) + ".tmp.", 0) == 0 || n.rfind(std::string(f) + ".old.", 0) == 0) fs::remove(e.path(), ec);
  }
}

}  // namespace pd::train
