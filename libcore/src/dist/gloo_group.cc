// ProcessGroup over Gloo's TCP transport. Rendezvous goes through our store (Gloo has no TCP store of
// its own), under a per-generation prefix so that a restarted job never reads a dead rank's address.
#include <fmt/format.h>

#include "pd/core/error.h"
#include "pd/dist/process_group.h"
#include "pd/dist/store.h"

#ifdef PD_WITH_GLOO
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

namespace pd::dist {
namespace {

using Millis = std::chrono::milliseconds;

// Gloo's Store interface over our client, with a key prefix.
class PrefixedStore final : public gloo::rendezvous::Store {
 public:
  PrefixedStore(dist::Store& store, std::string prefix, int world) : store_(store), prefix_(std::move(prefix)), world_(world) {}
  void set(const std::string& key, const std::vector<char>& data) override { store_.set(prefix_ + key, data); }
  std::vector<char> get(const std::string& key) override { return store_.get(prefix_ + key, {}, describe(key)); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, store_.timeout()); }
  void wait(const std::vector<std::string>& keys, const Millis& timeout) override {
    for (const auto& k : keys) store_.get(prefix_ + k, timeout, describe(k));
  }

 private:
  // Gloo's keys are the peer's rank number: say so in a timeout.
  std::string describe(const std::string& key) const {
    return fmt::format("rank {} of {} to join (key '{}{}'); that rank has not started, or it failed before joining (see its log)",
                       key, world_, prefix_, key);
  }
  dist::Store& store_;
  std::string prefix_;
  int world_;
};

class GlooGroup final : public ProcessGroup {
 public:
  GlooGroup(Store& store, const GroupOptions& o) : ProcessGroup(o.rank, o.world, o.status_file), timeout_(o.timeout) {
    gloo::transport::tcp::attr attr;
    attr.hostname = o.host.empty() ? "127.0.0.1" : o.host;
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.world);
      ctx->setTimeout(o.timeout);
      PrefixedStore prefixed(store, fmt::format("gen{}/{}/", o.generation, o.name), o.world);
      ctx->connectFullMesh(prefixed, device_);
      context_ = ctx;
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      raise(ErrorCode::kIO, "rank {} of {} could not connect to its peers over TCP (address {}): {}", o.rank, o.world,
            attr.hostname, e.what());
    }
  }

  void allreduce_sum(float* data, size_t n, const std::string& what) override { allreduce(data, n, what); }
  void allreduce_sum(double* data, size_t n, const std::string& what) override { allreduce(data, n, what); }

  void broadcast(void* data, size_t bytes, int root, const std::string& what) override {
    run("broadcast", what, bytes, [&](uint32_t tag) {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<char*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  void allgather(const void* in, void* out, size_t bytes_per_rank, const std::string& what) override {
    run("allgather", what, bytes_per_rank, [&](uint32_t tag) {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes_per_rank);
      opts.setOutput(static_cast<char*>(out), bytes_per_rank * static_cast<size_t>(world_));
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    });
  }

  void gather(const void* in, void* out, size_t bytes_per_rank, int root, const std::string& what) override {
    run("gather", what, bytes_per_rank, [&](uint32_t tag) {
      gloo::GatherOptions opts(context_);
      opts.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes_per_rank);
      if (rank_ == root) opts.setOutput(static_cast<char*>(out), bytes_per_rank * static_cast<size_t>(world_));
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::gather(opts);
    });
  }

  void barrier(const std::string& what) override {
    run("barrier", what, 0, [&](uint32_t tag) {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

 private:
  template <typename T>
  void allreduce(T* data, size_t n, const std::string& what) {
    run("allreduce", what, n * sizeof(T), [&](uint32_t tag) {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(data, n);
      void (*fn)(void*, const void*, const void*, size_t) = &gloo::sum<T>;
      opts.setReduceFunction(fn);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  }

  // Runs one collective under its sequence number; Gloo's errors become a pd::Error that says which
  // collective, on which rank, after how long, and what usually causes it.
  template <typename Fn>
  void run(const char* kind, const std::string& what, size_t bytes, Fn&& fn) {
    const int64_t seq = begin(kind, what);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      fn(static_cast<uint32_t>(seq));
    } catch (const std::exception& e) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const bool timed_out = std::string(e.what()).find("imed out") != std::string::npos;
      raise(ErrorCode::kIO, "{} #{} ({}, {} bytes) failed on rank {} of {} after {:.1f} s: {}. {}", kind, seq, what, bytes, rank_,
            world_, waited, e.what(),
            timed_out ? fmt::format("Another rank stopped making progress for the {} s timeout (stuck, stopped, or much "
                                    "slower); its log says where",
                                    timeout_.count() / 1000.0)
                      : "Another rank has probably exited or been killed; its log says why");
    }
  }

  Millis timeout_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace

std::unique_ptr<ProcessGroup> make_gloo_group(Store& store, const GroupOptions& options) {
  PD_CHECK(options.world >= 1 && options.rank >= 0 && options.rank < options.world, ErrorCode::kInvalidArgument,
           "rank {} is not in a world of {} ranks", options.rank, options.world);
  return std::make_unique<GlooGroup>(store, options);
}

}  // namespace pd::dist
#else
namespace pd::dist {
std::unique_ptr<ProcessGroup> make_gloo_group(Store&, const GroupOptions&) {
  raise(ErrorCode::kNotImplemented, "this paddle-cpp was built without Gloo (-DPD_WITH_GLOO=OFF), so it cannot train on "
        "more than one rank; rebuild with libgloo-dev installed");
}

}  // namespace pd::dist
#endif
