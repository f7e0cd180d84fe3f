// The ranks pd-dist runs on this node: started with the job's environment, each in its own process
// group (so that stopping a rank stops whatever it started) and with a parent-death signal (so that a
// killed launcher leaves no orphans); their output goes to DIR/rank.N.log, rank 0's also to the terminal.
#pragma once
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace pd::dist_tool {

struct RankSpec {
  int rank = 0, local_rank = 0;
  std::map<std::string, std::string> env;  // added to pd-dist's own environment
  std::string log_path, status_path;
  bool echo = false;                       // copy its output to the terminal, prefixed "[rank N] "
};

struct RankExit {
  int rank = 0, local_rank = 0;
  pid_t pid = 0;
  int status = 0;  // as waitpid reports it
  long peak_rss_kib = 0;  // the rank's largest resident set (getrusage's ru_maxrss)
  bool ok() const;
  std::string describe() const;  // "exited with status 2", "was killed by signal 9 (SIGKILL)"
};

class LocalRanks {
 public:
  // Starts every rank; pd::Error when the command cannot be run.
  LocalRanks(const std::vector<std::string>& command, const std::vector<RankSpec>& ranks, const std::string& header);
  ~LocalRanks();  // kills what is still running
  // Copies output and reaps exits for up to `ms`; returns the ranks that exited meanwhile.
  std::vector<RankExit> poll(int ms);
  bool all_exited() const;
  // SIGTERM to every live rank, then SIGKILL to those still alive after `grace_ms`; reaps them all.
  // Returns the exits seen while stopping.
  std::vector<RankExit> stop(int grace_ms);
  const RankSpec& spec(int local_rank) const { return specs_.at(static_cast<size_t>(local_rank)); }

 private:
  struct Child {
    pid_t pid = -1;
    int out_fd = -1, log_fd = -1;
    std::string pending;  // a partial line of echoed output
    bool exited = false;
  };
  void drain(Child& c, const RankSpec& s, bool final);
  std::vector<RankSpec> specs_;
  std::vector<Child> children_;
};

// Resolves `name` as pd-dist runs it: a path as given, else next to pd-dist itself (a build tree's
// pd-train), else on PATH. pd::Error when nothing is found.
std::string resolve_command(const std::string& name);

// The last lines of a log (for the failure report).
std::string tail_lines(const std::string& path, int n);

}  // namespace pd::dist_tool
