// The rendezvous store: a small TCP key-value store (like torchrun's c10d store). pd-dist serves it on
// the master node; ranks exchange Gloo addresses through it, and the launchers of all nodes use it to
// meet, to agree on the job, and to tell each other that a rank failed.
//
//   pd::dist::StoreServer server("", 29500);                    // pd::Error naming the address if taken
//   pd::dist::StoreClient store("10.0.0.1", 29500, std::chrono::seconds(60));
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

class StoreClient {
 public:
  // Connects, retrying while the server is not up yet, for at most `timeout`; the same timeout bounds
  // every later wait. pd::Error names the address and what was awaited.
  StoreClient(std::string host, int port, std::chrono::milliseconds timeout);
  ~StoreClient();

  void set(const std::string& key, const Bytes& value);
  void set(const std::string& key, const std::string& value) { set(key, Bytes(value.begin(), value.end())); }
  // Waits until `key` is set (at most `timeout`, default the client's); `waiting_for` says in the
  // timeout message what the key stands for ("node 1 of 2 to arrive").
  Bytes get(const std::string& key, std::optional<std::chrono::milliseconds> timeout = {},
            const std::string& waiting_for = "");
  std::string get_string(const std::string& key, std::optional<std::chrono::milliseconds> timeout = {},
                         const std::string& waiting_for = "");
  // The value if the key is set now; does not wait.
  std::optional<Bytes> try_get(const std::string& key);
  // Atomically adds `delta` to the integer counter `key` (0 when unset) and returns the new value.
  int64_t add(const std::string& key, int64_t delta);

  std::chrono::milliseconds timeout() const { return timeout_; }
  const std::string& address() const { return address_; }
  // The local address of the connection: how this machine is reached from the store's machine.
  std::string local_address() const;

 private:
  // nullopt when the server answered that a get's key was not set in time.
  std::optional<Bytes> request(char op, const std::string& key, const Bytes& value, int64_t arg, std::chrono::milliseconds wait,
                const std::string& waiting_for);

  std::string host_, address_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  struct Conn;
  std::unique_ptr<Conn> conn_;
};

}  // namespace pd::dist
