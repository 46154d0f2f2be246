#include "server/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace tern::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kSlice{100};  // how soon a wait notices shutdown

thread_local Connection* t_current = nullptr;
thread_local bool t_rejecting = false;

void AddressOf(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    port = ntohs(a->sin6_port);
  }
  ip = buf;
}

}  // namespace

int Connection::Wait(short events, Clock::time_point deadline, bool end_on_stopping, uint64_t shed_epoch) const {
  for (;;) {
    if (control_.closing.load() || (end_on_stopping && control_.stopping.load())) return -1;
    if (shed_epoch != UINT64_MAX && control_.shed_idle_epoch.load() != shed_epoch) return -1;
    const auto now = Clock::now();
    if (now >= deadline) return 0;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd p{.fd = fd_, .events = events, .revents = 0};
    const int rc = ::poll(&p, 1, int(std::max<int64_t>(1, std::min(left, kSlice).count())));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (rc > 0) return (p.revents & POLLNVAL) ? -1 : 1;  // POLLHUP/POLLERR: the next call reports it
  }
}

bool Connection::WaitForRequest() {
  phase_ = Phase::kIdle;
  no_body_ = false;
  if (Wait(POLLIN, Clock::now() + control_.limits.keep_alive_timeout, /*end_on_stopping=*/true,
           control_.shed_idle_epoch.load()) != 1)
    return false;
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return false;  // closed (or reset) while idle
  phase_ = Phase::kHeaders;
  read_deadline_ = Clock::now() + control_.limits.read_timeout;
  header_deadline_ = Clock::now() + control_.limits.header_timeout;
  budget_ = control_.limits.max_header_bytes;
  return true;
}

void Connection::BeginBody(bool no_body) {
  phase_ = Phase::kBody;
  no_body_ = no_body;
  if (no_body) close_after_response = true;
  // Chunk framing and compressed bytes on top of the decoded limit, which the
  // body reader enforces exactly.
  budget_ = 2 * control_.limits.max_body_bytes + control_.limits.max_header_bytes;
}

bool Connection::PeerConnected() const {
  if (control_.closing.load()) return false;
  pollfd p{.fd = fd_, .events = POLLIN | POLLRDHUP, .revents = 0};
  if (::poll(&p, 1, 0) <= 0) return true;  // nothing to report: still there
  if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return false;
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return true;  // a pipelined request
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  return false;
}

void Connection::SendNow(const std::string& data) {
  (void)::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool Connection::is_readable() const {
  return Wait(POLLIN, ReadDeadline(), phase_ != Phase::kBody) == 1;
}

bool Connection::is_writable() const {
  if (!PeerConnected()) return false;
  return Wait(POLLOUT, Clock::now() + control_.limits.write_timeout, false) == 1;
}

ssize_t Connection::read(char* ptr, size_t size) {
  if (no_body_ && phase_ == Phase::kBody) return 0;
  if (budget_ == 0) {  // the phase read all it may
    broken_ = true;
    return -1;
  }
  size = std::min(size, budget_);
  for (;;) {
    // Requests still being read end on shutdown; a body being read may finish.
    const int w = Wait(POLLIN, ReadDeadline(), phase_ != Phase::kBody);
    if (w != 1) {
      broken_ = true;
      return -1;
    }
    const ssize_t n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n > 0) budget_ -= size_t(n);
    else broken_ = true;
    return n;
  }
}

ssize_t Connection::write(const char* ptr, size_t size) {
  for (;;) {
    const int w = Wait(POLLOUT, Clock::now() + control_.limits.write_timeout, false);
    if (w != 1) {
      broken_ = true;
      return -1;
    }
    const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n < 0) broken_ = true;
    return n;
  }
}

void Connection::get_remote_ip_and_port(std::string& ip, int& port) const { AddressOf(fd_, true, ip, port); }
void Connection::get_local_ip_and_port(std::string& ip, int& port) const { AddressOf(fd_, false, ip, port); }

Connection* CurrentConnection() { return t_current; }

CurrentConnectionScope::CurrentConnectionScope(Connection* c) : prev_(t_current) { t_current = c; }
CurrentConnectionScope::~CurrentConnectionScope() { t_current = prev_; }

bool ClientConnected() { return t_current == nullptr || t_current->PeerConnected(); }

void CloseConnectionAfterResponse() {
  if (t_current) t_current->close_after_response = true;
}

ConnectionPool::ConnectionPool(size_t workers, std::atomic<uint64_t>* shed_idle_epoch)
    : workers_(workers), shed_idle_epoch_(shed_idle_epoch) {
  for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(false); });
  threads_.emplace_back([this] { Work(true); });
}

ConnectionPool::~ConnectionPool() { shutdown(); }

bool ConnectionPool::RejectingThisConnection() { return t_rejecting; }

void ConnectionPool::enqueue(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (busy_ + jobs_.size() >= workers_) {
      rejects_.push_back(std::move(fn));
      reject_cv_.notify_one();
      if (shed_idle_epoch_) shed_idle_epoch_->fetch_add(1);
      return;
    }
    jobs_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void ConnectionPool::Work(bool rejecter) {
  t_rejecting = rejecter;
  auto& queue = rejecter ? rejects_ : jobs_;
  auto& cv = rejecter ? reject_cv_ : cv_;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock lock(mu_);
      cv.wait(lock, [&] { return !queue.empty() || shutdown_; });
      if (queue.empty()) return;  // shut down and nothing left
      fn = std::move(queue.front());
      queue.pop_front();
      if (!rejecter) ++busy_;
    }
    try {
      fn();
    } catch (...) {
      // process_and_close_socket catches what a connection throws; nothing
      // may end the worker.
    }
    if (!rejecter) {
      std::lock_guard lock(mu_);
      --busy_;
    }
  }
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (shutdown_ && threads_.empty()) return;
    shutdown_ = true;
  }
  cv_.notify_all();
  reject_cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace tern::server
