// Blocking TCP sockets with deadlines, for the rendezvous store: every wait is bounded, and every
// failure names the address.
#pragma once
#include <chrono>
#include <string>

namespace pd::dist {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// An owned file descriptor.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.release()) {}
  Socket& operator=(Socket&& o) noexcept;
  ~Socket();
  int fd() const { return fd_; }
  int release();
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// A listening socket on host:port (port 0 = any free port). pd::Error naming the address when the port
// is taken or the host is not this machine's.
Socket listen_on(const std::string& host, int port);
int bound_port(const Socket& s);
// Connects to host:port, retrying refused connections until `deadline` (the server may not be up yet).
Socket connect_to(const std::string& host, int port, Clock::time_point deadline);
// The local address a connected socket uses: how this node is reached from its peer.
std::string local_address(const Socket& s);

// Whole-buffer I/O until `deadline`. They return false when the peer closed the connection or the
// deadline passed (`timed_out` says which); other errors throw.
bool send_all(const Socket& s, const void* data, size_t n, Clock::time_point deadline, bool* timed_out = nullptr);
bool recv_all(const Socket& s, void* data, size_t n, Clock::time_point deadline, bool* timed_out = nullptr);

}  // namespace pd::dist
