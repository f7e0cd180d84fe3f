#include "socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include "pd/core/error.h"
#include "pd/dist/store.h"

namespace pd::dist {
namespace {

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) freeaddrinfo(list);
  }
};

AddrInfo resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  AddrInfo r;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &r.list);
  PD_CHECK(rc == 0, ErrorCode::kInvalidArgument, "cannot resolve '{}': {}", host, gai_strerror(rc));
  return r;
}

// Waits until `fd` is readable/writable or the deadline passes; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    int rc = poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) raise(ErrorCode::kIO, "poll: {}", std::strerror(errno));
  }
}

}  // namespace

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

int Socket::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

Socket listen_on(const std::string& host, int port) {
  AddrInfo ai = resolve(host, port, true);
  std::string last_error = "no address";
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(s.fd(), 128) == 0) return s;
    last_error = std::strerror(errno);
  }
  raise(ErrorCode::kIO, "cannot listen on {}:{}: {}", host.empty() ? "*" : host, port, last_error);
}

int bound_port(const Socket& s) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(s.fd(), reinterpret_cast<sockaddr*>(&ss), &len);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

Socket connect_to(const std::string& host, int port, Clock::time_point deadline) {
  std::string last_error;
  for (;;) {
    AddrInfo ai = resolve(host, port, false);
    for (addrinfo* a = ai.list; a; a = a->ai_next) {
      Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
      if (!s.valid()) continue;
      int rc = ::connect(s.fd(), a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        if (!wait_fd(s.fd(), POLLOUT, std::min(deadline, Clock::now() + Millis(2000)))) {
          last_error = "no answer";
          continue;
        }
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
      if (rc == 0) {
        int flags = fcntl(s.fd(), F_GETFL);
        fcntl(s.fd(), F_SETFL, flags & ~O_NONBLOCK);
        int one = 1;
        setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return s;
      }
      last_error = std::strerror(errno);
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(Millis(100));
  }
  raise(ErrorCode::kIO, "cannot connect to {}:{}: {}", host, port, last_error);
}

std::string local_address(const Socket& s) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(s.fd(), reinterpret_cast<sockaddr*>(&ss), &len);
  char host[NI_MAXHOST] = {};
  getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  return host;
}

bool send_all(const Socket& s, const void* data, size_t n, Clock::time_point deadline, bool* timed_out) {
  if (timed_out) *timed_out = false;
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    if (!wait_fd(s.fd(), POLLOUT, deadline)) {
      if (timed_out) *timed_out = true;
      return false;
    }
    ssize_t k = ::send(s.fd(), p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EPIPE || errno == ECONNRESET) return false;
      raise(ErrorCode::kIO, "send: {}", std::strerror(errno));
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool recv_all(const Socket& s, void* data, size_t n, Clock::time_point deadline, bool* timed_out) {
  if (timed_out) *timed_out = false;
  char* p = static_cast<char*>(data);
  while (n > 0) {
    if (!wait_fd(s.fd(), POLLIN, deadline)) {
      if (timed_out) *timed_out = true;
      return false;
    }
    ssize_t k = ::recv(s.fd(), p, n, 0);
    if (k == 0) return false;
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return false;
      raise(ErrorCode::kIO, "recv: {}", std::strerror(errno));
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

std::pair<std::string, int> parse_host_port(const std::string& text, const std::string& what) {
  const size_t colon = text.rfind(':');
  int port = -1;
  if (colon != std::string::npos && colon > 0) {
    const char* b = text.data() + colon + 1;
    const char* e = text.data() + text.size();
    auto [p, ec] = std::from_chars(b, e, port);
    if (ec != std::errc() || p != e || b == e) port = -1;
  }
  PD_CHECK(port >= 0 && port <= 65535, ErrorCode::kInvalidArgument,
           "{} '{}' is not HOST:PORT (for example 10.0.0.1:29500, port 0-65535)", what, text);
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);  // [::1]:29500
  return {host, port};
}

}  // namespace pd::dist
