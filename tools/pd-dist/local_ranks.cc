#include "local_ranks.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "pd/core/error.h"

extern char** environ;

namespace pd::dist_tool {
namespace fs = std::filesystem;

bool RankExit::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string RankExit::describe() const {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return fmt::format("was killed by signal {} (SIG{})", sig, abbrev ? abbrev : "?");
  }
  return fmt::format("stopped (wait status {})", status);
}

std::string resolve_command(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    PD_CHECK(access(name.c_str(), X_OK) == 0, ErrorCode::kInvalidArgument, "the command '{}' is not an executable file", name);
    return name;
  }
  std::error_code ec;
  const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / name;
  if (!ec && access(beside.c_str(), X_OK) == 0) return beside.string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t b = 0; b <= dirs.size();) {
    size_t e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    const fs::path candidate = fs::path(dirs.substr(b, e - b)) / name;
    if (e > b && access(candidate.c_str(), X_OK) == 0) return candidate.string();
    b = e + 1;
  }
  raise(ErrorCode::kInvalidArgument, "the command '{}' was found neither next to pd-dist ({}) nor on PATH", name,
        beside.parent_path().string());
}

std::string tail_lines(const std::string& path, int n) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.rfind("==== pd-dist", 0) == 0) continue;  // not our own start headers
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > n) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) out += "    " + l + "\n";
  return out;
}

LocalRanks::LocalRanks(const std::vector<std::string>& command, const std::vector<RankSpec>& ranks, const std::string& header)
    : specs_(ranks) {
  const pid_t launcher = getpid();
  for (const RankSpec& s : specs_) {
    Child c;
    c.log_fd = ::open(s.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    PD_CHECK(c.log_fd >= 0, ErrorCode::kIO, "cannot open the log file {}: {}", s.log_path, std::strerror(errno));
    if (::write(c.log_fd, header.data(), header.size()) < 0) {}
    int fds[2];
    PD_CHECK(pipe2(fds, O_CLOEXEC) == 0, ErrorCode::kIO, "pipe: {}", std::strerror(errno));
    // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (!s.env.count(kv.substr(0, kv.find('=')))) env_strings.push_back(kv);
    }
    for (const auto& [k, v] : s.env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = command;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    PD_CHECK(pid >= 0, ErrorCode::kIO, "fork: {}", std::strerror(errno));
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher) _exit(127);  // the launcher died before the signal was armed
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      execve(argv[0], argv.data(), envp.data());
      const char msg[] = "pd-dist: exec failed\n";
      if (::write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {}
      _exit(127);
    }
    setpgid(pid, pid);  // also here: no race with a signal sent before the child ran setpgid
    ::close(fds[1]);
    c.pid = pid;
    c.out_fd = fds[0];
    fcntl(c.out_fd, F_SETFL, fcntl(c.out_fd, F_GETFL) | O_NONBLOCK);
    children_.push_back(c);
  }
}

LocalRanks::~LocalRanks() {
  for (auto& c : children_) {
    if (!c.exited && c.pid > 0) {
      kill(-c.pid, SIGKILL);
      waitpid(c.pid, nullptr, 0);
    }
    if (c.out_fd >= 0) ::close(c.out_fd);
    if (c.log_fd >= 0) ::close(c.log_fd);
  }
}

void LocalRanks::drain(Child& c, const RankSpec& s, bool final) {
  char buf[65536];
  for (;;) {
    const ssize_t k = ::read(c.out_fd, buf, sizeof buf);
    if (k <= 0) break;
    if (::write(c.log_fd, buf, static_cast<size_t>(k)) < 0) {}
    if (!s.echo) continue;
    c.pending.append(buf, static_cast<size_t>(k));
    for (size_t nl; (nl = c.pending.find('\n')) != std::string::npos;) {
      fmt::print(stderr, "[rank {}] {}\n", s.rank, c.pending.substr(0, nl));
      c.pending.erase(0, nl + 1);
    }
  }
  if (final && s.echo && !c.pending.empty()) {
    fmt::print(stderr, "[rank {}] {}\n", s.rank, c.pending);
    c.pending.clear();
  }
}

std::vector<RankExit> LocalRanks::poll(int ms) {
  std::vector<pollfd> fds;
  for (auto& c : children_) fds.push_back({c.out_fd, POLLIN, 0});
  ::poll(fds.data(), fds.size(), ms);
  std::vector<RankExit> exits;
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    drain(c, specs_[i], false);
    if (c.exited) continue;
    int status = 0;
    rusage usage{};
    if (wait4(c.pid, &status, WNOHANG, &usage) == c.pid) {
      c.exited = true;
      drain(c, specs_[i], true);
      exits.push_back({specs_[i].rank, specs_[i].local_rank, c.pid, status, usage.ru_maxrss});
    }
  }
  return exits;
}

bool LocalRanks::all_exited() const {
  for (const auto& c : children_)
    if (!c.exited) return false;
  return true;
}

std::vector<RankExit> LocalRanks::stop(int grace_ms) {
  for (auto& c : children_)
    if (!c.exited) {
      kill(-c.pid, SIGTERM);
      kill(-c.pid, SIGCONT);  // a stopped rank handles SIGTERM only once it runs again
    }
  std::vector<RankExit> exits;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (!all_exited() && std::chrono::steady_clock::now() < deadline) {
    auto e = poll(50);
    exits.insert(exits.end(), e.begin(), e.end());
  }
  for (auto& c : children_)
    if (!c.exited) kill(-c.pid, SIGKILL);
  while (!all_exited()) {
    auto e = poll(50);
    exits.insert(exits.end(), e.begin(), e.end());
  }
  return exits;
}

}  // namespace pd::dist_tool
