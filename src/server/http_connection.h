// A client connection as tern serve runs it: the socket I/O under the limits
// of HttpLimits, what a handler may ask of the connection it runs on, and the
// pool of worker threads that serve connections. Part of the HTTP adapter
// (with http_server.cc): nothing outside those two files includes this.
//
// cpp-httplib (Debian's 0.11 build) reads requests through an httplib::Stream;
// Connection is that stream, so every byte the library reads or writes passes
// the checks here:
//   - a request (line, headers and body) must arrive within read_timeout of
//     its first byte, and its line and headers within header_timeout, however
//     slowly they trickle: a few hundred half-sent requests cannot hold the
//     worker threads for long;
//   - the request line and headers may take max_header_bytes, the body's raw
//     bytes (chunk framing included) a budget derived from max_body_bytes:
//     the library's line reader, which has no limit of its own, never holds
//     more;
//   - each write must make progress within write_timeout (a stalled reader
//     frees its thread; a long stream that keeps moving is never cut);
//   - shutdown: `stopping` ends idle keep-alive waits and requests still
//     being read; `closing` fails every read and write.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "server/http_server.h"

namespace tern::server {

// What every connection of one server shares.
struct ConnectionControl {
  HttpLimits limits;
  std::atomic<bool> stopping{false};  // no new request starts; half-read ones end
  std::atomic<bool> closing{false};   // all I/O fails
  std::atomic<size_t> open{0};        // connections being served
  // Bumped when a connection was refused for want of a worker: connections
  // idle between requests then close, so the next client finds one free.
  std::atomic<uint64_t> shed_idle_epoch{0};
};

class Connection final : public httplib::Stream {
 public:
  enum class Phase { kIdle, kHeaders, kBody };

  Connection(int fd, ConnectionControl& control) : fd_(fd), control_(control) {}

  // Waits for the first byte of the next request (keep-alive); false on
  // timeout, end of stream or shutdown. Then the request's read deadline starts.
  bool WaitForRequest();
  // The request line and headers were read; the body's budget starts. With
  // `no_body` (a request that declared neither Content-Length nor chunked) the
  // body reads as empty and the connection closes after the response.
  void BeginBody(bool no_body);
  // False once the peer has closed or reset the connection (a pipelined next
  // request still counts as connected). Does not block.
  bool PeerConnected() const;
  // Best effort, for answering before any request is read (over the
  // connection limit): a non-blocking send of `data`.
  void SendNow(const std::string& data);

  bool close_after_response = false;
  Phase phase() const { return phase_; }
  // A read or write failed (deadline, budget, shutdown, peer gone): the
  // connection cannot carry another request.
  bool broken() const { return broken_; }

  // httplib::Stream.
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }

 private:
  // Waits for `events` up to `deadline`, in slices that notice shutdown.
  // 1: ready; 0: deadline passed; -1: error or shutdown.
  int Wait(short events, std::chrono::steady_clock::time_point deadline, bool end_on_stopping,
           uint64_t shed_epoch = UINT64_MAX) const;

  int fd_;
  ConnectionControl& control_;
  Phase phase_ = Phase::kIdle;
  bool no_body_ = false;
  bool broken_ = false;
  std::chrono::steady_clock::time_point read_deadline_;
  std::chrono::steady_clock::time_point header_deadline_;  // Phase::kHeaders: the earlier of the two
  std::chrono::steady_clock::time_point ReadDeadline() const {
    return phase_ == Phase::kHeaders ? std::min(read_deadline_, header_deadline_) : read_deadline_;
  }
  size_t budget_ = 0;  // bytes the current phase may still read
};

// The connection whose request this thread is handling (handlers run on the
// thread of their connection), or nullptr off the HTTP worker threads.
Connection* CurrentConnection();
// Sets CurrentConnection for the scope of a request.
class CurrentConnectionScope {
 public:
  explicit CurrentConnectionScope(Connection* c);
  ~CurrentConnectionScope();

 private:
  Connection* prev_;
};

// True while the client of the request handled on this thread is still
// connected (always true off the HTTP threads).
bool ClientConnected();
// The connection closes once the response now being built is written.
void CloseConnectionAfterResponse();

// The worker threads: max_connections of them, one per connection served.
// A connection accepted while all are busy goes to one rejecting thread,
// which answers 503 and closes it (RejectingThisConnection).
class ConnectionPool : public httplib::TaskQueue {
 public:
  // `shed_idle_epoch` (optional) is bumped on each refusal.
  explicit ConnectionPool(size_t workers, std::atomic<uint64_t>* shed_idle_epoch = nullptr);
  ~ConnectionPool() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

  // True on the rejecting thread.
  static bool RejectingThisConnection();

 private:
  void Work(bool rejecter);

  std::mutex mu_;
  std::condition_variable cv_, reject_cv_;
  std::deque<std::function<void()>> jobs_, rejects_;
  size_t workers_, busy_ = 0;
  std::atomic<uint64_t>* shed_idle_epoch_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tern::server
