// write_pair_atomic: see pd/io/file_pair.h for the protocol and why each step is where it is.
#include "pd/io/file_pair.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "pd/core/error.h"

namespace pd::io {
namespace {

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return fmt::format(".{}.{}", ::getpid(), counter++);
}

std::string dir_of(const std::string& path) {
  const std::string d = std::filesystem::path(path).parent_path().string();
  return d.empty() ? "." : d;
}

// Writes and syncs `bytes` to `tmp`; on failure nothing is left and the error names `path`.
void write_synced(const std::string& path, const std::string& tmp, const std::string& bytes) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) raise(ErrorCode::kIO, "{}: cannot create a file in {}: {}", path, dir_of(path), std::strerror(errno));
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(tmp.c_str());
      raise(ErrorCode::kIO, "{}: write failed: {}", path, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !synced) {
    ::unlink(tmp.c_str());
    raise(ErrorCode::kIO, "{}: fsync failed: {}", path, std::strerror(err));
  }
}

void sync_dir(const std::string& path) {
  const int dfd = ::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on directories
    ::close(dfd);
  }
}

void refuse_directory(const std::string& path) {
  std::error_code ec;
  PD_CHECK(!std::filesystem::is_directory(path, ec), ErrorCode::kInvalidArgument,
           "{}: is a directory; give a file name for the output", path);
}

}  // namespace

std::string pending_path(const std::string& second_path) { return second_path + ".pending"; }

void crash_point(const char* name) {
  const char* at = std::getenv("PD_CRASH_AT");
  if (at && std::strcmp(at, name) == 0) ::raise(SIGKILL);
}

void write_pair_atomic(const std::string& first_path, const std::string& first_bytes, const std::string& second_path,
                       const std::string& second_bytes) {
  refuse_directory(first_path);
  refuse_directory(second_path);
  const std::string suffix = unique_suffix();
  const std::string first_tmp = first_path + ".tmp" + suffix, second_tmp = second_path + ".tmp" + suffix;
  const std::string pending = pending_path(second_path), backup = first_path + ".old" + suffix;
  write_synced(first_path, first_tmp, first_bytes);
  try {
    write_synced(second_path, second_tmp, second_bytes);
  } catch (...) {
    ::unlink(first_tmp.c_str());
    throw;
  }
  auto fail = [&](const char* what) {
    const int err = errno;
    ::unlink(first_tmp.c_str());
    ::unlink(second_tmp.c_str());
    ::unlink(pending.c_str());
    raise(ErrorCode::kIO, "{}: {} failed: {}; the previous files are unchanged", second_path, what, std::strerror(err));
  };
  if (::rename(second_tmp.c_str(), pending.c_str()) != 0) fail("rename");
  sync_dir(second_path);
  crash_point("staged");
  // A hard link keeps the old `first` so that a failing second rename can put it back.
  const bool have_backup = ::link(first_path.c_str(), backup.c_str()) == 0;
  if (::rename(first_tmp.c_str(), first_path.c_str()) != 0) {
    if (have_backup) ::unlink(backup.c_str());
    fail("rename");
  }
  crash_point("first-renamed");
  if (::rename(pending.c_str(), second_path.c_str()) != 0) {
    const int err = errno;
    if (have_backup) ::rename(backup.c_str(), first_path.c_str());
    else ::unlink(first_path.c_str());
    ::unlink(pending.c_str());
    raise(ErrorCode::kIO, "{}: rename failed: {}; the previous files are unchanged", second_path, std::strerror(err));
  }
  if (have_backup) ::unlink(backup.c_str());
  sync_dir(second_path);
  crash_point("done");
}

}  // namespace pd::io
