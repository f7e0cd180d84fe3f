#include "job_board.h"

#include <fmt/format.h>

#include <thread>

#include "pd/core/error.h"

namespace pd::dist_tool {

std::string JobSettings::str() const {
  return fmt::format("--nnodes {} --nproc-per-node {} --max-restarts {}", nnodes, nproc_per_node, max_restarts);
}

JobBoard::JobBoard(dist::Store& store, int node_rank, const JobSettings& settings)
    : store_(store), node_(node_rank), settings_(settings) {}

void JobBoard::meet() {
  PD_CHECK(store_.add(fmt::format("job/claim/node{}", node_), 1) == 1, ErrorCode::kInvalidArgument,
           "another pd-dist has already joined the job at {} as --node-rank {}; give each node its own --node-rank from 0 to {}{}",
           store_.address(), node_, settings_.nnodes - 1,
           store_.address().rfind("file:", 0) == 0 ? " (or the directory still holds the keys of a job that did not finish: "
                                                      "remove it, or give this job another)"
                                                    : "");
  // Node 0 announces itself first; the others read node 0's settings before they announce theirs, so
  // that each side of a mismatch can say what the other has.
  if (node_ == 0) store_.set(fmt::format("job/node{}", node_), settings_.str());
  auto check_same = [&](int other) {
    const std::string theirs = store_.get_string(
        fmt::format("job/node{}", other), {},
        fmt::format("node {} of {} to join (start pd-dist with --node-rank {} and --master {} there)", other, settings_.nnodes,
                    other, store_.address()));
    PD_CHECK(theirs == settings_.str(), ErrorCode::kInvalidArgument,
             "node {} joined the job at {} with {}, but node {} has {}; every node must be started with the same settings",
             other, store_.address(), theirs, node_, settings_.str());
  };
  if (node_ == 0) {
    for (int n = 1; n < settings_.nnodes; ++n) check_same(n);
    store_.set("job/go", "1");
  } else {
    const std::string node0 = store_.get_string("job/node0", {}, "node 0 to start (pd-dist --node-rank 0)");
    store_.set(fmt::format("job/node{}", node_), settings_.str());
    PD_CHECK(node0 == settings_.str(), ErrorCode::kInvalidArgument,
             "node 0 joined the job at {} with {}, but node {} has {}; every node must be started with the same settings",
             store_.address(), node0, node_, settings_.str());
    store_.get("job/go", {}, fmt::format("node 0 to see all {} nodes arrive", settings_.nnodes));
  }
}

void JobBoard::report_failure(int generation, const std::string& message, bool cause) {
  if (store_.add(fmt::format("gen{}/failures", generation), 1) == 1) store_.set(fmt::format("gen{}/failure", generation), message);
  if (cause && store_.add(fmt::format("gen{}/causes", generation), 1) == 1)
    store_.set(fmt::format("gen{}/cause", generation), message);
}

std::optional<std::string> JobBoard::failure(int generation) {
  auto v = store_.try_get(fmt::format("gen{}/cause", generation));
  if (!v) v = store_.try_get(fmt::format("gen{}/failure", generation));
  if (!v) return std::nullopt;
  return std::string(v->begin(), v->end());
}

std::optional<std::string> JobBoard::cause(int generation, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (auto v = store_.try_get(fmt::format("gen{}/cause", generation))) return std::string(v->begin(), v->end());
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void JobBoard::report_done(int generation) { store_.add(fmt::format("gen{}/done", generation), 1); }

void JobBoard::wait_all_done(int generation) {
  const auto deadline = std::chrono::steady_clock::now() + store_.timeout();
  while (store_.add(fmt::format("gen{}/done", generation), 0) < settings_.nnodes) {
    PD_CHECK(std::chrono::steady_clock::now() < deadline, ErrorCode::kIO,
             "the ranks of this node finished, but not every node reported done within {} s",
             store_.timeout().count() / 1000.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace pd::dist_tool
