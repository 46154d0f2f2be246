// HttpServer against real sockets on 127.0.0.1: body limits whatever the
// encoding, read deadlines, the connection limit, shutdown with half-open
// connections, disconnect detection. Limits are small so each case takes
// well under a second.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace tern::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kLimit = 1 << 20;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpLimits limits = {}) {
    limits.max_body_bytes = kLimit;
    if (limits.read_timeout == milliseconds(60000)) limits.read_timeout = milliseconds(500);
    if (limits.max_connections == 256) limits.max_connections = 8;
    http_ = std::make_unique<HttpServer>(limits);
    http_->Get("/ok", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
    http_->Post("/echo_size", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    http_->Get("/wait_for_hangup", [this](const httplib::Request&, httplib::Response& res) {
      const auto t0 = Clock::now();
      while (ClientConnected() && Seconds(t0) < 5) std::this_thread::sleep_for(milliseconds(10));
      hangup_seen_after_ = Seconds(t0);
      res.set_content("late", "text/plain");
    });
    http_->Get("/slow_stream", [](const httplib::Request&, httplib::Response& res) {
      auto start = std::make_shared<Clock::time_point>(Clock::now());
      res.set_chunked_content_provider("text/plain", [start](size_t, httplib::DataSink& sink) {
        std::this_thread::sleep_for(milliseconds(100));
        if (Seconds(*start) > 1.5) {
          sink.done();
          return true;
        }
        return sink.write("tick\n", 5);
      });
    });
    http_->set_pre_routing_handler(nullptr);
    http_->AddBodyFallbacks();
    port_ = http_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    listener_ = std::thread([this] { http_->listen_after_bind(); });
    while (!http_->is_running()) std::this_thread::sleep_for(milliseconds(5));
  }

  void TearDown() override {
    if (listener_.joinable()) {
      http_->BeginShutdown();
      http_->stop();
      http_->CloseAll();
      listener_.join();
    }
  }

  int Connect() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    return fd;
  }

  static bool SendAll(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += size_t(n);
    }
    return true;
  }

  // Everything the server sends until it closes (or `timeout`).
  static std::string ReadAll(int fd, milliseconds timeout = milliseconds(5000)) {
    std::string got;
    const auto until = Clock::now() + timeout;
    char buf[4096];
    while (Clock::now() < until) {
      pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, size_t(n));
    }
    return got;
  }

  // True once the server has closed fd (end of stream or reset) within `timeout`.
  static bool ClosedWithin(int fd, milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    char buf[4096];
    while (Clock::now() < until) {
      pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      if (::recv(fd, buf, sizeof(buf), 0) <= 0) return true;
    }
    return false;
  }

  std::string Get(const std::string& path) {
    const int fd = Connect();
    SendAll(fd, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string r = ReadAll(fd);
    ::close(fd);
    return r;
  }

  std::unique_ptr<HttpServer> http_;
  std::thread listener_;
  int port_ = 0;
  std::atomic<double> hangup_seen_after_{-1};
};

std::string Chunked(size_t total, size_t chunk) {
  std::string out;
  const std::string data(chunk, 'a');
  for (size_t sent = 0; sent < total; sent += chunk) {
    const size_t n = std::min(chunk, total - sent);
    char head[32];
    snprintf(head, sizeof(head), "%zx\r\n", n);
    out += head;
    out.append(data, 0, n);
    out += "\r\n";
  }
  return out + "0\r\n\r\n";
}

TEST(CheckFramingTest, RefusesWhatCannotBeBounded) {
  auto check = [](const std::string& method, httplib::Headers h) {
    httplib::Request r;
    r.method = method;
    r.headers = std::move(h);
    auto e = CheckFraming(r, kLimit);
    return e ? e->status : 0;
  };
  EXPECT_EQ(check("POST", {{"Content-Length", "10"}}), 0);
  EXPECT_EQ(check("POST", {{"Transfer-Encoding", "chunked"}}), 0);
  EXPECT_EQ(check("POST", {{"Content-Length", "-5"}}), 400);
  EXPECT_EQ(check("POST", {{"Content-Length", "12abc"}}), 400);
  EXPECT_EQ(check("POST", {{"Content-Length", "99999999999999999999999"}}), 400);
  EXPECT_EQ(check("POST", {{"Content-Length", std::to_string(kLimit + 1)}}), 413);
  EXPECT_EQ(check("POST", {{"Content-Length", "1"}, {"Content-Length", "2"}}), 400);
  EXPECT_EQ(check("POST", {{"Transfer-Encoding", "gzip, chunked"}}), 501);
  EXPECT_EQ(check("POST", {{"Transfer-Encoding", "chunked"}, {"Content-Length", "3"}}), 400);
  EXPECT_EQ(check("PRI", {}), 405);
}

TEST(ReadBodyBoundedTest, StopsAtTheLimit) {
  size_t offered = 0;
  httplib::ContentReader reader(
      [&](httplib::ContentReceiver receive) {
        const std::string piece(64 << 10, 'x');
        for (int i = 0; i < 1000; ++i) {  // 64 MiB on offer
          offered += piece.size();
          if (!receive(piece.data(), piece.size())) return false;
        }
        return true;
      },
      nullptr);
  std::string body;
  EXPECT_EQ(ReadBodyBounded(reader, kLimit, &body), BodyRead::kTooLarge);
  EXPECT_LE(body.size(), kLimit);
  EXPECT_LE(offered, kLimit + (64 << 10));
  body.clear();
  httplib::ContentReader exact([](httplib::ContentReceiver receive) { return receive("abc", 3); }, nullptr);
  EXPECT_EQ(ReadBodyBounded(exact, 3, &body), BodyRead::kOk);
  EXPECT_EQ(body, "abc");
}

TEST_F(HttpServerTest, ChunkedBodyPastTheLimitIs413) {
  Start();
  const int fd = Connect();
  SendAll(fd, "POST /echo_size HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::thread writer([&] { SendAll(fd, Chunked(kLimit + 1, 16 << 10)); });
  const std::string r = ReadAll(fd);
  writer.join();
  ::close(fd);
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 413") << r.substr(0, 200);
  // A chunked body within the limit is read whole.
  const int ok = Connect();
  SendAll(ok, "POST /echo_size HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                  Chunked(kLimit, 100000));
  const std::string r2 = ReadAll(ok);
  ::close(ok);
  EXPECT_EQ(r2.substr(0, 12), "HTTP/1.1 200") << r2.substr(0, 200);
  EXPECT_NE(r2.find("\r\n\r\n" + std::to_string(kLimit)), std::string::npos) << r2;
  EXPECT_NE(Get("/ok").find("200 OK"), std::string::npos);
}

TEST_F(HttpServerTest, CompressedBodyInflatingPastTheLimitIs413) {
  Start();
  const std::string plain(8 * kLimit, 'a');
  uLongf size = compressBound(uLong(plain.size()));
  std::string packed(size, '\0');
  ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(packed.data()), &size, reinterpret_cast<const Bytef*>(plain.data()),
                      uLong(plain.size()), 9),
            Z_OK);
  packed.resize(size);
  ASSERT_LT(packed.size(), kLimit / 8);
  for (const char* encoding : {"deflate", "gzip"}) {
    const int fd = Connect();
    SendAll(fd, "POST /echo_size HTTP/1.1\r\nHost: x\r\nContent-Encoding: " + std::string(encoding) +
                    "\r\nContent-Length: " + std::to_string(packed.size()) + "\r\n\r\n" + packed);
    const std::string r = ReadAll(fd);
    ::close(fd);
    EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 413") << encoding << ": " << r.substr(0, 200);
  }
}

TEST_F(HttpServerTest, BodyToAnUnknownPathIsBoundedToo) {
  Start();
  const int fd = Connect();
  SendAll(fd, "POST /nowhere HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::thread writer([&] { SendAll(fd, Chunked(4 * kLimit, 16 << 10)); });
  const std::string r = ReadAll(fd);
  writer.join();
  ::close(fd);
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 413") << r.substr(0, 200);
}

TEST_F(HttpServerTest, BadContentLengthIs400AndClosesTheConnection) {
  Start();
  const int fd = Connect();
  SendAll(fd, "POST /echo_size HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\nabc");
  const auto t0 = Clock::now();
  const std::string r = ReadAll(fd, milliseconds(3000));
  ::close(fd);
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 400") << r;
  EXPECT_LT(Seconds(t0), 2.0);  // closed, not held open
}

TEST_F(HttpServerTest, HalfSentRequestIsDroppedAtTheReadDeadline) {
  Start();
  const int fd = Connect();
  SendAll(fd, "POST /echo_size HTTP/1.1\r\nHost: x\r\nContent-Le");
  const auto t0 = Clock::now();
  EXPECT_TRUE(ClosedWithin(fd, milliseconds(3000)));
  EXPECT_LT(Seconds(t0), 1.5);
  ::close(fd);
}

TEST_F(HttpServerTest, TricklingRequestIsDroppedAtTheReadDeadline) {
  Start();
  const int fd = Connect();
  const std::string req = "POST /echo_size HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'x');
  const auto t0 = Clock::now();
  bool closed = false;
  for (size_t i = 0; i < req.size() && !closed; ++i) {  // one byte every 50 ms: 7 s for the request
    if (!SendAll(fd, req.substr(i, 1))) break;
    closed = ClosedWithin(fd, milliseconds(50));
  }
  EXPECT_TRUE(closed || ClosedWithin(fd, milliseconds(1000)));
  EXPECT_LT(Seconds(t0), 2.0);
  ::close(fd);
}

TEST_F(HttpServerTest, LongStreamOutlivesTheReadTimeout) {
  Start();
  const std::string r = Get("/slow_stream");  // 1.5 s of output, read timeout 0.5 s
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 200");
  EXPECT_GE(std::count(r.begin(), r.end(), '\n'), 10);
  EXPECT_NE(r.find("0\r\n\r\n"), std::string::npos);  // the chunked stream's end
}

TEST_F(HttpServerTest, ConnectionsPastTheLimitAre503) {
  HttpLimits l;
  l.max_connections = 3;
  l.read_timeout = milliseconds(3000);
  Start(l);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(Connect());
    SendAll(held.back(), "GET /ok HTTP/1.1\r\n");  // half a request: holds its worker
  }
  std::this_thread::sleep_for(milliseconds(100));
  const std::string r = Get("/ok");
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 503") << r;
  for (int fd : held) ::close(fd);
  // The workers are freed when those clients go: service resumes.
  std::string again;
  for (int i = 0; i < 50 && again.find("200 OK") == std::string::npos; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    again = Get("/ok");
  }
  EXPECT_NE(again.find("200 OK"), std::string::npos) << again;
}

TEST_F(HttpServerTest, ShutdownClosesIdleAndHalfSentConnections) {
  HttpLimits l;
  l.read_timeout = milliseconds(60000);  // the deadline must not be what ends them
  l.keep_alive_timeout = milliseconds(60000);
  Start(l);
  const int half = Connect(), idle = Connect();
  SendAll(half, "GET /ok HTTP/1.1\r\nHo");
  std::this_thread::sleep_for(milliseconds(100));
  const auto t0 = Clock::now();
  http_->BeginShutdown();
  http_->stop();
  listener_.join();
  EXPECT_LT(Seconds(t0), 1.0);
  EXPECT_TRUE(ClosedWithin(half, milliseconds(100)));
  EXPECT_TRUE(ClosedWithin(idle, milliseconds(100)));
  ::close(half);
  ::close(idle);
}

TEST_F(HttpServerTest, HandlerSeesTheClientHangUp) {
  Start();
  const int fd = Connect();
  SendAll(fd, "GET /wait_for_hangup HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(milliseconds(200));
  ::close(fd);
  for (int i = 0; i < 300 && hangup_seen_after_.load() < 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_GT(hangup_seen_after_.load(), 0.1);
  EXPECT_LT(hangup_seen_after_.load(), 1.0);
}

TEST(ClientConnectedTest, TrueOffTheHttpThreads) { EXPECT_TRUE(ClientConnected()); }

}  // namespace
}  // namespace tern::server
