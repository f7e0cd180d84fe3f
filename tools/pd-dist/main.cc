// pd-dist [--nnodes N --node-rank R --master HOST:PORT] --nproc-per-node K [--max-restarts M]
//         [--timeout S] [--log-dir DIR] -- pd-train CONFIG [flags]
// Starts and supervises the ranks of a data-parallel job on this node (torchrun's role): serves the
// rendezvous store on node 0, stops every rank on every node when one fails, restarts from the last
// checkpoint when asked, and says which rank failed, how, in which collective, and where its log is.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include "common/cli_checks.h"
#include "common/tool_main.h"
#include "job_board.h"
#include "local_ranks.h"
#include "pd/dist/process_group.h"
#include "pd/dist/store.h"

namespace {
namespace fs = std::filesystem;
using pd::dist_tool::JobBoard;
using pd::dist_tool::LocalRanks;
using pd::dist_tool::RankExit;

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal = sig; }

struct Options {
  int nnodes = 1, node_rank = 0, nproc = 1, max_restarts = 0, timeout_s = 60;
  std::string master, host, log_dir = "pd-dist-logs";
  std::vector<std::string> command;
};

std::string now_text() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

// Why a rank's exit stopped the job: how it ended, the collective it was in, its log and last lines.
// The other ranks' last collectives show which one lags behind when a collective timed out.
std::string failure_report(const RankExit& e, const pd::dist_tool::RankSpec& s, int node,
                           const std::vector<pd::dist_tool::RankSpec>& all) {
  std::string msg = fmt::format("rank {} (node {}, local rank {}, pid {}) {}", e.rank, node, e.local_rank, e.pid, e.describe());
  const std::string in = pd::dist::CollectiveStatus::read(s.status_path);
  if (!in.empty()) msg += fmt::format("; its last collective was {}", in);
  msg += fmt::format("; log: {}", s.log_path);
  const std::string tail = pd::dist_tool::tail_lines(s.log_path, 3);
  if (!tail.empty()) msg += "\n  its last lines:\n" + tail;
  if (all.size() > 1) {
    msg += fmt::format("  last collective of each rank on node {}:", node);
    for (const auto& r : all) {
      const std::string c = pd::dist::CollectiveStatus::read(r.status_path);
      msg += fmt::format("\n    rank {}: {}", r.rank, c.empty() ? "none yet" : c);
    }
  }
  return msg;
}

enum class Outcome { done, failed, interrupted };

// Runs one generation of the local ranks until they all finish, one fails (here or on another node),
// or pd-dist is interrupted.
// `store_env`: where the ranks find the store (MASTER_ADDR and MASTER_PORT, or PD_DIST_STORE).
Outcome run_generation(const Options& o, JobBoard& board, int gen, const std::map<std::string, std::string>& store_env,
                       const std::string& host, std::string& report) {
  std::vector<pd::dist_tool::RankSpec> specs;
  const int world = o.nnodes * o.nproc;
  for (int l = 0; l < o.nproc; ++l) {
    const int rank = o.node_rank * o.nproc + l;
    pd::dist_tool::RankSpec s;
    s.rank = rank;
    s.local_rank = l;
    s.log_path = (fs::path(o.log_dir) / fmt::format("rank.{}.log", rank)).string();
    s.status_path = (fs::path(o.log_dir) / fmt::format(".rank.{}.collective", rank)).string();
    s.echo = rank == 0;
    s.env = {{"RANK", std::to_string(rank)},
             {"WORLD_SIZE", std::to_string(world)},
             {"LOCAL_RANK", std::to_string(l)},
             {"LOCAL_WORLD_SIZE", std::to_string(o.nproc)},
             {"GROUP_RANK", std::to_string(o.node_rank)},
             {"PD_DIST_HOST", host},
             {"PD_DIST_RESTART", std::to_string(gen)},
             {"PD_DIST_TIMEOUT", std::to_string(o.timeout_s)},
             {"PD_DIST_STATUS_FILE", s.status_path}};
    s.env.insert(store_env.begin(), store_env.end());
    specs.push_back(s);
  }
  const std::string header = fmt::format("==== pd-dist {}: start {} of this job (restart {}) ====\n", now_text(), gen + 1, gen);
  LocalRanks ranks(o.command, specs, header);
  const int grace_ms = 3000;
  auto last_check = std::chrono::steady_clock::now();
  std::vector<std::string> peaks;  // of the ranks that finished
  for (;;) {
    std::vector<RankExit> failed;
    for (const RankExit& e : ranks.poll(100)) {
      if (e.ok()) peaks.push_back(fmt::format("rank {} {:.0f} MiB", e.rank, static_cast<double>(e.peak_rss_kib) / 1024));
      else failed.push_back(e);
    }
    if (!failed.empty()) {
      // A rank whose collective failed usually lost a peer that failed first. A local one has exited by
      // now too (reaped here, in any order); one on another node shows up on the board.
      for (const RankExit& e : ranks.poll(50))
        if (!e.ok()) failed.push_back(e);
      auto is_consequence = [&](const RankExit& e) {
        return pd::dist_tool::tail_lines(ranks.spec(e.local_rank).log_path, 1).find("failed on rank") != std::string::npos;
      };
      const auto local_cause = std::find_if(failed.begin(), failed.end(), [&](const RankExit& e) { return !is_consequence(e); });
      const RankExit& e = local_cause != failed.end() ? *local_cause : failed.front();
      const bool consequence = local_cause == failed.end();
      report = failure_report(e, ranks.spec(e.local_rank), o.node_rank, specs);
      const auto failed_at = std::chrono::steady_clock::now();
      try {
        board.report_failure(gen, report, !consequence);
        ranks.stop(grace_ms);
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - failed_at);
        if (consequence)
          if (auto cause = board.cause(gen, std::max(std::chrono::milliseconds(0), std::chrono::milliseconds(2000) - waited));
              cause && *cause != report)
            report = *cause + fmt::format("\n  on node {} as a consequence: rank {} {}", o.node_rank, e.rank, e.describe());
      } catch (const pd::Error&) {
        ranks.stop(grace_ms);  // the store may be gone with node 0; stopping the ranks is what matters
      }
      return Outcome::failed;
    }
    if (g_signal != 0) {
      report = fmt::format("pd-dist on node {} was interrupted (signal {})", o.node_rank, g_signal.load());
      try {
        board.report_failure(gen, report, true);
      } catch (const pd::Error&) {
      }
      // SIGTERM lets pd-train save a checkpoint before it exits.
      ranks.stop(std::max(grace_ms, 10000));
      return Outcome::interrupted;
    }
    if (ranks.all_exited()) {
      std::sort(peaks.begin(), peaks.end());
      fmt::print(stderr, "pd-dist: every rank of node {} finished; peak resident memory: {}\n", o.node_rank, fmt::join(peaks, ", "));
      return Outcome::done;
    }
    if (std::chrono::steady_clock::now() - last_check > std::chrono::milliseconds(250)) {
      last_check = std::chrono::steady_clock::now();
      try {
        if (auto f = board.failure(gen)) {
          report = *f;
          ranks.stop(grace_ms);
          return Outcome::failed;
        }
      } catch (const pd::Error& e) {
        report = fmt::format("node {}: {}", o.node_rank, e.what());
        ranks.stop(grace_ms);
        return Outcome::failed;
      }
    }
  }
}

struct RendezvousStore {
  std::unique_ptr<pd::dist::Store> store;
  std::map<std::string, std::string> env;  // how the ranks find it
  std::string host;                        // this node's address for the other nodes' ranks
};

// This machine's address as its host name resolves (IPv4, not loopback): how the ranks of other nodes
// reach this one when no TCP store connection shows it.
std::string host_name_address() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  std::string address;
  if (::getaddrinfo(name, nullptr, &hints, &found) == 0) {
    for (addrinfo* a = found; a && address.empty(); a = a->ai_next) {
      char text[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof text);
      if (std::string(text).rfind("127.", 0) != 0) address = text;
    }
    ::freeaddrinfo(found);
  }
  PD_CHECK(!address.empty(), pd::ErrorCode::kInvalidArgument,
           "with a file store and several nodes, pd-dist needs this node's address for the others' ranks, and the host name "
           "'{}' does not resolve to one that is not loopback; pass --host ADDR",
           name);
  return address;
}

// --master HOST:PORT: node 0 serves a TCP store there (default with one node: loopback, a free port).
// --master file:DIR: a file store in DIR, which every node mounts.
RendezvousStore open_store(const Options& o, std::unique_ptr<pd::dist::StoreServer>& server, std::chrono::seconds timeout) {
  RendezvousStore r;
  if (o.master.rfind("file:", 0) == 0) {
    PD_CHECK(o.master.size() > 5, pd::ErrorCode::kInvalidArgument, "--master file:DIR needs a directory after 'file:'");
    r.store = std::make_unique<pd::dist::FileStore>(o.master.substr(5), timeout);
    r.env = {{"PD_DIST_STORE", o.master}};
    r.host = !o.host.empty() ? o.host : o.nnodes == 1 ? "127.0.0.1" : host_name_address();
    return r;
  }
  auto [master_host, master_port] = o.master.empty() ? std::pair<std::string, int>{"127.0.0.1", 0}
                                                     : pd::dist::parse_host_port(o.master, "--master");
  if (o.node_rank == 0) {
    try {
      // One node: loopback only. Several: every interface, since the others come from outside.
      server = std::make_unique<pd::dist::StoreServer>(o.nnodes == 1 ? master_host : "", master_port);
    } catch (const pd::Error& e) {
      pd::raise(pd::ErrorCode::kIO,
                "cannot serve the rendezvous store on port {} ({}); is another job using it? Pick a free port with --master "
                "HOST:PORT",
                master_port, e.what());
    }
    master_port = server->port();
  }
  auto client = std::make_unique<pd::dist::StoreClient>(master_host, master_port, timeout);
  r.host = !o.host.empty() ? o.host : client->local_address();  // how this node is reached from node 0's side
  r.store = std::move(client);
  r.env = {{"MASTER_ADDR", master_host}, {"MASTER_PORT", std::to_string(master_port)}};
  return r;
}

int launch(Options o) {
  PD_CHECK(o.node_rank < o.nnodes, pd::ErrorCode::kInvalidArgument, "--node-rank {} is not below --nnodes {}", o.node_rank,
           o.nnodes);
  PD_CHECK(o.nnodes == 1 || !o.master.empty(), pd::ErrorCode::kInvalidArgument,
           "--nnodes {} needs --master HOST:PORT, the address of node 0 that every node can reach (or --master file:DIR, "
           "a directory every node mounts)",
           o.nnodes);
  PD_CHECK(!o.command.empty(), pd::ErrorCode::kInvalidArgument,
           "no command to run; put it after --, for example: pd-dist --nproc-per-node 2 -- pd-train examples/mlp_fmnist.yaml");
  o.command[0] = pd::dist_tool::resolve_command(o.command[0]);
  fs::create_directories(o.log_dir);
  const auto timeout = std::chrono::seconds(o.timeout_s);
  std::unique_ptr<pd::dist::StoreServer> server;
  RendezvousStore rdzv = open_store(o, server, timeout);
  const pd::dist_tool::JobSettings settings{o.nnodes, o.nproc, o.max_restarts};
  JobBoard board(*rdzv.store, o.node_rank, settings);
  board.meet();
  if (!std::getenv("OMP_NUM_THREADS") && o.nproc > 1) {
    const int threads = std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(o.nproc));
    setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
    fmt::print(stderr, "pd-dist: {} ranks on this node; OMP_NUM_THREADS={} for each (set it to choose)\n", o.nproc, threads);
  }
  fmt::print(stderr, "pd-dist: node {} of {}, ranks {}-{} of {}; store {}; logs in {}/rank.N.log\n", o.node_rank, o.nnodes,
             o.node_rank * o.nproc, o.node_rank * o.nproc + o.nproc - 1, o.nnodes * o.nproc, rdzv.store->address(), o.log_dir);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  for (int gen = 0;; ++gen) {
    std::string report;
    const Outcome outcome = run_generation(o, board, gen, rdzv.env, rdzv.host, report);
    if (outcome == Outcome::done) {
      board.report_done(gen);
      if (o.node_rank == 0) board.wait_all_done(gen);
      // A file store is left empty, ready for the next job (a failed job's keys stay, to be read).
      if (auto* files = dynamic_cast<pd::dist::FileStore*>(rdzv.store.get()); files && o.node_rank == 0) files->clear();
      return 0;
    }
    if (outcome == Outcome::interrupted) {
      fmt::print(stderr, "pd-dist: {}; stopped every rank of this node\n", report);
      return 130;
    }
    fmt::print(stderr, "pd-dist: {}\npd-dist: stopped every rank of node {}\n", report, o.node_rank);
    if (gen >= o.max_restarts) {
      if (o.max_restarts > 0) fmt::print(stderr, "pd-dist: no restarts left (--max-restarts {})\n", o.max_restarts);
      return 1;
    }
    fmt::print(stderr, "pd-dist: restarting every rank from the last checkpoint (restart {} of {})\n", gen + 1, o.max_restarts);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pd-dist: run a data-parallel job (docs/pd-dist.md)", "pd-dist"};
  Options o;
  app.add_option("--nnodes", o.nnodes, "how many nodes (machines) take part")->check(pd::tools::integer_in<int>(1, 4096, "a node count from 1 to 4096"));
  app.add_option("--node-rank", o.node_rank, "this node's number, 0 to nnodes-1 (node 0 serves the store)")->check(pd::tools::integer_in<int>(0, 4095, "a node number from 0 to 4095"));
  app.add_option("--master", o.master, "HOST:PORT of node 0's rendezvous store (default with one node: 127.0.0.1 and a free port), or file:DIR for a store in a directory every node mounts");
  app.add_option("--host", o.host, "this node's address for the other nodes' ranks (default: as the store sees it; with file:DIR, the host name's address)");
  app.add_option("--nproc-per-node", o.nproc, "ranks to run on this node")->check(pd::tools::integer_in<int>(1, 1024, "a rank count from 1 to 1024"));
  app.add_option("--max-restarts", o.max_restarts, "restart every rank from the last checkpoint up to M times after a failure")->check(pd::tools::integer_in<int>(0, 1000, "a count from 0 to 1000"));
  app.add_option("--timeout", o.timeout_s, "seconds to wait for a node, a rank or a collective before giving up")->check(pd::tools::integer_in<int>(1, 86400, "seconds from 1 to 86400"));
  app.add_option("--log-dir", o.log_dir, "where rank.N.log go (appended to, never replaced)");
  app.add_option("command", o.command, "the command each rank runs, after --")->expected(-1);
  return pd::tools::run_tool("pd-dist", app, argc, argv, [&]() -> int { return launch(o); });
}
