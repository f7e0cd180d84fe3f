// The rendezvous store: a small key-value store that ranks exchange Gloo addresses through, and that
// the launchers of all nodes use to meet, to agree on the job, and to tell each other that a rank
// failed. Two kinds: a TCP store that pd-dist serves on the master node (like torchrun's c10d store),
// and a directory on a filesystem every node mounts (like Gloo's and PyTorch's FileStore).
//
//   pd::dist::StoreServer server("", 29500);                    // pd::Error naming the address if taken
//   pd::dist::StoreClient store("10.0.0.1", 29500, std::chrono::seconds(60));
//   pd::dist::FileStore shared("/nfs/jobs/run7", std::chrono::seconds(60));
//   store.set("gen0/addr/1", bytes);
//   auto v = store.get("gen0/addr/0");                          // waits for the key, up to the timeout
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pd::dist {

using Bytes = std::vector<char>;

// "HOST:PORT" (or "[v6]:PORT") -> host, port; pd::Error naming `what` (a flag) when it is not of that form.
std::pair<std::string, int> parse_host_port(const std::string& text, const std::string& what);

class StoreServer {
 public:
  // Binds host:port ("" = every interface; port 0 = a free one) and serves on a background thread.
  StoreServer(const std::string& host, int port);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Store {
 public:
  explicit Store(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  void set(const std::string& key, const std::string& value) { set(key, Bytes(value.begin(), value.end())); }
  // Waits until `key` is set (at most `timeout`, default the store's); `waiting_for` says in the
  // timeout message what the key stands for ("node 1 of 2 to arrive").
  virtual Bytes get(const std::string& key, std::optional<std::chrono::milliseconds> timeout = {},
                    const std::string& waiting_for = "") = 0;
  std::string get_string(const std::string& key, std::optional<std::chrono::milliseconds> timeout = {},
                         const std::string& waiting_for = "");
  // The value if the key is set now; does not wait.
  virtual std::optional<Bytes> try_get(const std::string& key) = 0;
  // Atomically adds `delta` to the integer counter `key` (0 when unset) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;

  std::chrono::milliseconds timeout() const { return timeout_; }
  // Where the store is, for messages: "10.0.0.1:29500", "file:/nfs/jobs/run7".
  virtual std::string address() const = 0;

 protected:
  // The timeout message of a get.
  [[noreturn]] void timed_out(const std::string& key, std::chrono::milliseconds waited, const std::string& waiting_for) const;
  std::chrono::milliseconds timeout_;
};

class StoreClient final : public Store {
 public:
  // Connects, retrying while the server is not up yet, for at most `timeout`; the same timeout bounds
  // every later wait. pd::Error names the address and what was awaited.
  StoreClient(std::string host, int port, std::chrono::milliseconds timeout);
  ~StoreClient() override;

  using Store::set;
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, std::optional<std::chrono::milliseconds> timeout = {},
            const std::string& waiting_for = "") override;
  std::optional<Bytes> try_get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string address() const override { return address_; }
  // The local address of the connection: how this machine is reached from the store's machine.
  std::string local_address() const;

 private:
  // nullopt when the server answered that a get's key was not set in time.
  std::optional<Bytes> request(char op, const std::string& key, const Bytes& value, int64_t arg, std::chrono::milliseconds wait,
                const std::string& waiting_for);

  std::string host_, address_;
  int port_;
  std::mutex mu_;
  struct Conn;
  std::unique_ptr<Conn> conn_;
};

// A store in a directory that every node sees (NFS, a cluster filesystem): one file per key, written
// to a temporary name and renamed into place; counters under a POSIX record lock; gets poll. Gloo's
// own FileStore writes each key once and has no counters, which the launchers need.
class FileStore final : public Store {
 public:
  // Creates `dir` if needed; pd::Error when it cannot be written.
  FileStore(std::string dir, std::chrono::milliseconds timeout);
  using Store::set;
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, std::optional<std::chrono::milliseconds> timeout = {},
            const std::string& waiting_for = "") override;
  std::optional<Bytes> try_get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string address() const override { return "file:" + dir_; }
  // Removes every key (node 0, once the job has finished, so that the directory can serve the next).
  void clear();

 private:
  std::string path_of(const std::string& key) const;
  std::string dir_;
};

}  // namespace pd::dist
