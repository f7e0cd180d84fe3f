// The rendezvous store in a shared directory. Keys become file names (bytes outside [A-Za-z0-9._-]
// escaped as %XX, so "gen0/gloo/1" is one file); a value is written to a temporary file named after
// this host and process and renamed over the key, so a reader sees the old value or the new one,
// never half of one. Counters take a POSIX record lock (fcntl; NFS's lock manager honours it) on
// their own lock file around the read-modify-write, and a mutex against this process's other threads.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "pd/core/error.h"
#include "pd/dist/store.h"

namespace pd::dist {
namespace {

using Millis = std::chrono::milliseconds;
namespace fs = std::filesystem;

std::string escape(const std::string& key) {
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::optional<Bytes> read_if_there(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Bytes out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  return out;
}

// A lock on `path` held for the scope (fcntl record lock: per process, honoured over NFS).
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    PD_CHECK(fd_ >= 0, ErrorCode::kIO, "the rendezvous store cannot open its lock file {}: {}", path, std::strerror(errno));
    struct flock l{};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    while (::fcntl(fd_, F_SETLKW, &l) < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd_);
      raise(ErrorCode::kIO, "the rendezvous store cannot lock {}: {}", path, std::strerror(err));
    }
  }
  ~FileLock() { ::close(fd_); }  // closing drops the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace

FileStore::FileStore(std::string dir, Millis timeout) : Store(timeout), dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  PD_CHECK(!ec && fs::is_directory(dir_), ErrorCode::kIO,
           "cannot use {} as the rendezvous store: {} (it must be a directory every node can write, such as one on NFS)", dir_,
           ec ? ec.message() : "not a directory");
  PD_CHECK(::access(dir_.c_str(), W_OK) == 0, ErrorCode::kIO, "cannot use {} as the rendezvous store: {}", dir_,
           std::strerror(errno));
}

std::string FileStore::path_of(const std::string& key) const { return dir_ + "/" + escape(key); }

// Written whole under a name no other host, process or thread uses, then renamed over the key. No
// fsync: the keys coordinate one job, they are not data to keep across a crash.
void FileStore::set(const std::string& key, const Bytes& value) {
  static std::atomic<uint64_t> counter{0};
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string path = path_of(key), tmp = fmt::format("{}/.tmp.{}.{}.{}", dir_, host, ::getpid(), counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  PD_CHECK(fd >= 0, ErrorCode::kIO, "the rendezvous store cannot write {}: {}", tmp, std::strerror(errno));
  size_t done = 0;
  while (done < value.size()) {
    const ssize_t n = ::write(fd, value.data() + done, value.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const int err = errno;
  const bool ok = ::close(fd) == 0 && done == value.size() && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    ::unlink(tmp.c_str());
    raise(ErrorCode::kIO, "the rendezvous store cannot write key '{}' to {}: {}", key, path, std::strerror(err ? err : errno));
  }
}

std::optional<Bytes> FileStore::try_get(const std::string& key) { return read_if_there(path_of(key)); }

Bytes FileStore::get(const std::string& key, std::optional<Millis> timeout, const std::string& waiting_for) {
  const Millis wait = timeout.value_or(timeout_);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  Millis pause(2);
  for (;;) {
    if (auto v = try_get(key)) return *v;
    if (std::chrono::steady_clock::now() >= deadline) timed_out(key, wait, waiting_for);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, Millis(50));  // a shared filesystem is not for busy polling
  }
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  // Record locks exclude other processes only (and closing any descriptor of the file drops them):
  // threads of this process take turns first.
  static std::mutex in_process;
  std::lock_guard<std::mutex> turn(in_process);
  FileLock lock(path_of(key) + ".lock");
  int64_t v = 0;
  if (auto b = try_get(key); b && b->size() == sizeof v) std::memcpy(&v, b->data(), sizeof v);
  v += delta;
  Bytes out(sizeof v);
  std::memcpy(out.data(), &v, sizeof v);
  set(key, out);
  return v;
}

void FileStore::clear() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) fs::remove(e.path(), ec);
}

}  // namespace pd::dist
