// Wire format, both ways: [op u8][key length u32][key][value length u32][value][arg i64]. Requests:
// 'S' set, 'G' get (arg = how long to wait, ms), 'A' add (arg = delta). Replies: op 'K' with the value,
// or 'T' when a get's wait ran out. One request at a time per connection.
#include "pd/dist/store.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include "pd/core/error.h"
#include "socket.h"

namespace pd::dist {
namespace {

struct Message {
  char op = 0;
  std::string key;
  Bytes value;
  int64_t arg = 0;
};

constexpr uint32_t kMaxField = 64u << 20;  // a store holds addresses and ids, never tensors

bool write_message(const Socket& s, const Message& m, Clock::time_point deadline, bool* timed_out = nullptr) {
  std::string buf;
  auto put = [&](const void* p, size_t n) { buf.append(static_cast<const char*>(p), n); };
  const uint32_t kl = static_cast<uint32_t>(m.key.size()), vl = static_cast<uint32_t>(m.value.size());
  put(&m.op, 1);
  put(&kl, 4);
  put(m.key.data(), kl);
  put(&vl, 4);
  put(m.value.data(), vl);
  put(&m.arg, 8);
  return send_all(s, buf.data(), buf.size(), deadline, timed_out);
}

bool read_message(const Socket& s, Message& m, Clock::time_point deadline, bool* timed_out = nullptr) {
  uint32_t kl = 0, vl = 0;
  if (!recv_all(s, &m.op, 1, deadline, timed_out) || !recv_all(s, &kl, 4, deadline, timed_out)) return false;
  if (kl > kMaxField) return false;
  m.key.resize(kl);
  if (!recv_all(s, m.key.data(), kl, deadline, timed_out) || !recv_all(s, &vl, 4, deadline, timed_out)) return false;
  if (vl > kMaxField) return false;
  m.value.resize(vl);
  return recv_all(s, m.value.data(), vl, deadline, timed_out) && recv_all(s, &m.arg, 8, deadline, timed_out);
}

}  // namespace

// ---- server: one thread, poll() over the listening socket and every client ----

struct StoreServer::Impl {
  Socket listener;
  int port = 0;
  int wake[2] = {-1, -1};  // a pipe that stops the thread
  std::thread thread;
  std::map<std::string, Bytes> data;
  struct Waiter {
    int fd;
    std::string key;
    Clock::time_point deadline;
  };
  std::vector<Waiter> waiters;
  std::map<int, Socket> clients;

  void reply(int fd, char op, const Bytes& value) {
    Message m{op, "", value, 0};
    // A client that does not read its reply within a second is gone; drop it.
    if (!write_message(clients.at(fd), m, Clock::now() + Millis(1000))) clients.erase(fd);
  }

  void handle(int fd, Message& m) {
    if (m.op == 'S') {
      data[m.key] = m.value;
      reply(fd, 'K', {});
      for (size_t i = 0; i < waiters.size();) {
        if (waiters[i].key == m.key && clients.count(waiters[i].fd)) {
          reply(waiters[i].fd, 'K', m.value);
          waiters.erase(waiters.begin() + static_cast<long>(i));
        } else {
          ++i;
        }
      }
    } else if (m.op == 'G') {
      auto it = data.find(m.key);
      if (it != data.end()) reply(fd, 'K', it->second);
      else if (m.arg <= 0) reply(fd, 'T', {});
      else waiters.push_back({fd, m.key, Clock::now() + Millis(m.arg)});
    } else if (m.op == 'A') {
      int64_t v = 0;
      auto it = data.find(m.key);
      if (it != data.end() && it->second.size() == 8) std::memcpy(&v, it->second.data(), 8);
      v += m.arg;
      Bytes b(8);
      std::memcpy(b.data(), &v, 8);
      data[m.key] = b;
      reply(fd, 'K', b);
    } else {
      clients.erase(fd);  // not our protocol
    }
  }

  void loop() {
    for (;;) {
      std::vector<pollfd> fds{{wake[0], POLLIN, 0}, {listener.fd(), POLLIN, 0}};
      for (const auto& [fd, s] : clients) fds.push_back({fd, POLLIN, 0});
      int timeout_ms = 1000;
      const auto now = Clock::now();
      for (const auto& w : waiters)
        timeout_ms = std::min<int>(timeout_ms, static_cast<int>(std::max<int64_t>(
                                                   0, std::chrono::duration_cast<Millis>(w.deadline - now).count() + 1)));
      if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) clients.emplace(fd, Socket(fd));
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents || !clients.count(fds[i].fd)) continue;
        Message m;
        // A request arrives whole within a second of its first byte, or the client is dropped.
        if (!(fds[i].revents & POLLIN) || !read_message(clients.at(fds[i].fd), m, Clock::now() + Millis(1000))) {
          clients.erase(fds[i].fd);
          continue;
        }
        handle(fds[i].fd, m);
      }
      const auto later = Clock::now();
      for (size_t i = 0; i < waiters.size();) {
        if (!clients.count(waiters[i].fd)) {
          waiters.erase(waiters.begin() + static_cast<long>(i));
        } else if (waiters[i].deadline <= later) {
          reply(waiters[i].fd, 'T', {});
          waiters.erase(waiters.begin() + static_cast<long>(i));
        } else {
          ++i;
        }
      }
    }
  }
};

StoreServer::StoreServer(const std::string& host, int port) : impl_(std::make_unique<Impl>()) {
  impl_->listener = listen_on(host, port);
  impl_->port = bound_port(impl_->listener);
  PD_CHECK(pipe2(impl_->wake, O_CLOEXEC) == 0, ErrorCode::kIO, "pipe: {}", std::strerror(errno));
  impl_->thread = std::thread([this] { impl_->loop(); });
}

StoreServer::~StoreServer() {
  char c = 0;
  if (::write(impl_->wake[1], &c, 1) < 0) {}
  impl_->thread.join();
  ::close(impl_->wake[0]);
  ::close(impl_->wake[1]);
}

int StoreServer::port() const { return impl_->port; }

// ---- client ----

struct StoreClient::Conn {
  Socket s;
};

std::string Store::get_string(const std::string& key, std::optional<Millis> timeout, const std::string& waiting_for) {
  Bytes b = get(key, timeout, waiting_for);
  return std::string(b.begin(), b.end());
}

void Store::timed_out(const std::string& key, Millis waited, const std::string& waiting_for) const {
  raise(ErrorCode::kIO, "timed out after {} s at the rendezvous store {} waiting for {}", waited.count() / 1000.0, address(),
        waiting_for.empty() ? "key '" + key + "'" : waiting_for);
}

StoreClient::StoreClient(std::string host, int port, Millis timeout)
    : Store(timeout), host_(std::move(host)), address_(fmt::format("{}:{}", host_, port)), port_(port) {
  conn_ = std::make_unique<Conn>();
  try {
    conn_->s = connect_to(host_, port_, Clock::now() + timeout_);
  } catch (const Error& e) {
    raise(ErrorCode::kIO,
          "cannot reach the rendezvous store at {} within {} s ({}); is pd-dist running on the master node (--node-rank 0) "
          "with the same --master, and does a firewall let the port through?",
          address_, timeout_.count() / 1000.0, e.what());
  }
}

StoreClient::~StoreClient() = default;

std::string StoreClient::local_address() const { return dist::local_address(conn_->s); }

std::optional<Bytes> StoreClient::request(char op, const std::string& key, const Bytes& value, int64_t arg, Millis wait,
                           const std::string& waiting_for) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto deadline = Clock::now() + wait + Millis(5000);  // the server answers a get's wait itself
  PD_CHECK(conn_->s.valid(), ErrorCode::kIO, "the connection to the rendezvous store at {} was lost earlier", address_);
  Message reply;
  bool timed_out = false;
  if (!write_message(conn_->s, {op, key, value, arg}, deadline, &timed_out) ||
      !read_message(conn_->s, reply, deadline, &timed_out)) {
    conn_->s = Socket();
    raise(ErrorCode::kIO, "lost the rendezvous store at {} ({}) while {}; the master node's pd-dist has probably exited",
          address_, timed_out ? "no answer" : "connection closed", waiting_for.empty() ? "using key '" + key + "'" : "waiting for " + waiting_for);
  }
  if (reply.op == 'T') return std::nullopt;  // a get whose key was not set in time
  return reply.value;
}

void StoreClient::set(const std::string& key, const Bytes& value) { request('S', key, value, 0, Millis(0), ""); }

Bytes StoreClient::get(const std::string& key, std::optional<Millis> timeout, const std::string& waiting_for) {
  const Millis wait = timeout.value_or(timeout_);
  auto v = request('G', key, {}, std::max<int64_t>(1, wait.count()), wait, waiting_for);
  if (!v) timed_out(key, wait, waiting_for);
  return *v;
}

std::optional<Bytes> StoreClient::try_get(const std::string& key) { return request('G', key, {}, 0, Millis(0), ""); }

int64_t StoreClient::add(const std::string& key, int64_t delta) {
  const Bytes b = request('A', key, {}, delta, Millis(0), "").value_or(Bytes());
  int64_t v = 0;
  if (b.size() == 8) std::memcpy(&v, b.data(), 8);
  return v;
}

}  // namespace pd::dist
