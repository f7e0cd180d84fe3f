// What the launchers of one job tell each other through the rendezvous store: that each node has
// arrived with the same job settings, which rank failed first in a generation (and why), and which
// nodes finished.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "pd/dist/store.h"

namespace pd::dist_tool {

struct JobSettings {
  int nnodes = 1, nproc_per_node = 1, max_restarts = 0;
  std::string str() const;  // "--nnodes 2 --nproc-per-node 1 --max-restarts 0"
};

class JobBoard {
 public:
  JobBoard(dist::Store& store, int node_rank, const JobSettings& settings);
  // Announces this node and waits for every node (node 0) or for node 0's go (the others). pd::Error
  // naming a node that never came, one with other settings, or two nodes with one --node-rank.
  void meet();
  // Records a failure of this generation. A `cause` is a rank that failed by itself; the others are
  // ranks whose collective failed because a peer went away. The first of each kind is kept.
  void report_failure(int generation, const std::string& message, bool cause);
  // The first cause, else the first failure; nullopt while none was reported.
  std::optional<std::string> failure(int generation);
  // The first cause, waiting up to `wait` for one to be reported.
  std::optional<std::string> cause(int generation, std::chrono::milliseconds wait);
  void report_done(int generation);
  // Node 0 waits for the others before it stops serving the store they use.
  void wait_all_done(int generation);

 private:
  dist::Store& store_;
  int node_;
  JobSettings settings_;
};

}  // namespace pd::dist_tool
