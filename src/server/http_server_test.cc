// HttpServer against real sockets on 127.0.0.1: body limits whatever the
// encoding, read deadlines, the connection limit, shutdown with half-open
// connections, disconnect detection, and plain requests and responses
// (http_types.h) through the adapter and its hooks. Limits are small so each case takes
// well under a second.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
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
  void Start(HttpLimits limits = {}, HttpRoutes routes = {}) {
    limits.max_body_bytes = kLimit;
    if (limits.read_timeout == milliseconds(60000)) limits.read_timeout = milliseconds(500);
    if (limits.max_connections == 256) limits.max_connections = 8;
    http_ = std::make_unique<HttpServer>(limits);
    routes.Get("/ok", [](const HttpRequest&, HttpResponse& res) { res.SetBody(200, "ok", "text/plain"); });
    routes.Post("/echo_size", [](const HttpRequest& req, HttpResponse& res) {
      res.SetBody(200, std::to_string(req.body.size()), "text/plain");
    });
    routes.Get("/wait_for_hangup", [this](const HttpRequest& req, HttpResponse& res) {
      const auto t0 = Clock::now();
      while (req.ClientConnected() && Seconds(t0) < 5) std::this_thread::sleep_for(milliseconds(10));
      hangup_seen_after_ = Seconds(t0);
      res.SetBody(200, "late", "text/plain");
    });
    routes.Get("/slow_stream", [this](const HttpRequest&, HttpResponse& res) {
      auto start = std::make_shared<Clock::time_point>(Clock::now());
      res.SetStream("text/plain", StreamBody{.next = [start](ChunkSink& sink) {
                                               std::this_thread::sleep_for(milliseconds(100));
                                               if (Seconds(*start) > 1.5) {
                                                 sink.Done();
                                                 return true;
                                               }
                                               return sink.Write("tick\n");
                                             },
                                             .on_end = [this](bool completed) { stream_completed_ = completed; }});
    });
    http_->Mount(std::move(routes));
    port_ = http_->ListenOnAnyPort("127.0.0.1");
    ASSERT_GT(port_, 0);
    listener_ = std::thread([this] { http_->Run(); });
    while (!http_->running()) std::this_thread::sleep_for(milliseconds(5));
  }

  void TearDown() override {
    if (listener_.joinable()) {
      http_->BeginShutdown();
      http_->Stop();
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

  // Sends `text` a byte every `gap` until the server closes fd; true when it
  // did, before the last byte or within `grace` after it.
  static bool TrickleUntilClosed(int fd, const std::string& text, milliseconds gap, milliseconds grace) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (!SendAll(fd, text.substr(i, 1))) return true;  // the server had closed
      if (ClosedWithin(fd, gap)) return true;
    }
    return ClosedWithin(fd, grace);
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
  std::atomic<int> stream_completed_{-1};
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
  auto check = [](const std::string& method, std::vector<std::pair<std::string, std::string>> fields) {
    HttpHeaders h;
    for (auto& [k, v] : fields) h.Add(k, v);
    auto e = CheckFraming(method, h, kLimit);
    return e ? e->status : 0;
  };
  EXPECT_EQ(check("POST", {{"Content-Length", "10"}}), 0);
  EXPECT_EQ(check("POST", {{"transfer-encoding", "chunked"}}), 0);
  EXPECT_EQ(check("POST", {{"Content-Length", "-5"}}), 400);
  EXPECT_EQ(check("POST", {{"Content-Length", "12abc"}}), 400);
  EXPECT_EQ(check("POST", {{"Content-Length", "99999999999999999999999"}}), 400);
  EXPECT_EQ(check("POST", {{"Content-Length", std::to_string(kLimit + 1)}}), 413);
  EXPECT_EQ(check("POST", {{"Content-Length", "1"}, {"content-length", "2"}}), 400);
  EXPECT_EQ(check("POST", {{"Transfer-Encoding", "gzip, chunked"}}), 501);
  EXPECT_EQ(check("POST", {{"Transfer-Encoding", "chunked"}, {"Content-Length", "3"}}), 400);
  EXPECT_EQ(check("PRI", {}), 405);
}

TEST(ReadBodyBoundedTest, StopsAtTheLimit) {
  size_t offered = 0;
  const BodyReader reader = [&](const BodyReceiver& receive) {
    const std::string piece(64 << 10, 'x');
    for (int i = 0; i < 1000; ++i) {  // 64 MiB on offer
      offered += piece.size();
      if (!receive(piece.data(), piece.size())) return false;
    }
    return true;
  };
  std::string body;
  EXPECT_EQ(ReadBodyBounded(reader, kLimit, &body), BodyRead::kTooLarge);
  EXPECT_LE(body.size(), kLimit);
  EXPECT_LE(offered, kLimit + (64 << 10));
  body.clear();
  const BodyReader exact = [](const BodyReceiver& receive) { return receive("abc", 3); };
  EXPECT_EQ(ReadBodyBounded(exact, 3, &body), BodyRead::kOk);
  EXPECT_EQ(body, "abc");
}

// A hook that answers a POST before its body is read (the API key check)
// must not leave the body to be parsed as the next request.
TEST_F(HttpServerTest, BodyRefusedBeforeRoutingIsNotTakenForTheNextRequest) {
  HttpRoutes routes;
  routes.before_routing = [](const HttpRequest& req, HttpResponse& res) {
    if (req.path != "/refuse") return false;
    res.SetBody(401, "no", "text/plain");
    return true;
  };
  Start({}, std::move(routes));
  const int fd = Connect();
  SendAll(fd, "POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 25\r\n\r\n{\"messages\": [1, 2, 3]} "
              "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string r = ReadAll(fd, milliseconds(3000));
  ::close(fd);
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 401") << r;
  EXPECT_EQ(r.find("400"), std::string::npos) << r;  // the body was not parsed as a request line
  // Either the second request was answered (200) or the connection closed after the 401; not a 400.
  EXPECT_TRUE(r.find("Connection: close") != std::string::npos || r.find("HTTP/1.1 200") != std::string::npos) << r;
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
  // One byte every 50 ms: 7 s for the request.
  EXPECT_TRUE(TrickleUntilClosed(fd, req, milliseconds(50), milliseconds(1000)));
  EXPECT_LT(Seconds(t0), 2.0);
  ::close(fd);
}

// Headers trickled past header_timeout end the connection long before the
// read deadline; a body trickled after prompt headers has the read deadline.
TEST_F(HttpServerTest, TricklingHeadersAreDroppedAtTheHeaderDeadline) {
  HttpLimits limits;
  limits.read_timeout = milliseconds(3000);
  limits.header_timeout = milliseconds(300);
  Start(limits);
  int fd = Connect();
  const std::string head = "POST /echo_size HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 20\r\nX-Pad: " +
                           std::string(100, 'p') + "\r\n\r\n";
  auto t0 = Clock::now();
  // One byte every 20 ms: 3 s for the headers.
  EXPECT_TRUE(TrickleUntilClosed(fd, head, milliseconds(20), milliseconds(500)));
  EXPECT_LT(Seconds(t0), 1.2);
  ::close(fd);
  fd = Connect();
  ASSERT_TRUE(SendAll(fd, head));
  t0 = Clock::now();
  for (int i = 0; i < 20; ++i) {  // the body over ~1 s: past the header deadline, within the read deadline
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(SendAll(fd, "b"));
  }
  const std::string r = ReadAll(fd, milliseconds(2000));
  ::close(fd);
  EXPECT_GT(Seconds(t0), 0.9);
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 200") << r;
  EXPECT_NE(r.find("\r\n\r\n20"), std::string::npos) << r;
}

TEST_F(HttpServerTest, LongStreamOutlivesTheReadTimeout) {
  Start();
  const std::string r = Get("/slow_stream");  // 1.5 s of output, read timeout 0.5 s
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 200");
  EXPECT_GE(std::count(r.begin(), r.end(), '\n'), 10);
  EXPECT_NE(r.find("0\r\n\r\n"), std::string::npos);  // the chunked stream's end
  for (int i = 0; i < 100 && stream_completed_.load() < 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(stream_completed_.load(), 1);
}

TEST_F(HttpServerTest, StreamEndsIncompleteWhenTheClientGoes) {
  Start();
  const int fd = Connect();
  SendAll(fd, "GET /slow_stream HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got;
  char buf[4096];
  for (int i = 0; i < 100 && got.find("tick") == std::string::npos; ++i) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, 20) > 0) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, size_t(n));
    }
  }
  ASSERT_NE(got.find("tick"), std::string::npos) << got;
  ::close(fd);
  for (int i = 0; i < 150 && stream_completed_.load() < 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(stream_completed_.load(), 0);  // told, well before the stream's own end at 1.5 s
}

// What a handler sees of a request and what its plain response becomes on
// the wire, through every hook.
// Byte ranges are not served (the library copied the whole body once per
// range asked for, before any handler ran), and replies are compressed with
// gzip at most (Brotli's default quality runs at ~1 MB/s of a core).
TEST_F(HttpServerTest, RangesAreIgnoredAndRepliesAreNotBrotli) {
  HttpRoutes routes;
  routes.Get("/page", [](const HttpRequest&, HttpResponse& res) { res.SetBody(200, std::string(5000, 'p'), "text/html"); });
  Start({}, std::move(routes));
  auto get = [&](const std::string& headers) {
    const int fd = Connect();
    SendAll(fd, "GET /page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + "\r\n");
    std::string r = ReadAll(fd);
    ::close(fd);
    return r;
  };
  std::string ranges = "Range: bytes=-";
  for (int i = 0; i < 1000; ++i) ranges += ",-";
  const std::string whole = get(ranges + "\r\n");
  EXPECT_EQ(whole.substr(0, 15), "HTTP/1.1 200 OK") << whole.substr(0, 200);
  EXPECT_EQ(whole.find("multipart/byteranges"), std::string::npos);
  EXPECT_LT(whole.size(), 6000u);  // the page once, not 1,001 times
  const std::string br = get("Accept-Encoding: br\r\n");
  EXPECT_EQ(br.find("Content-Encoding"), std::string::npos) << br.substr(0, 300);
  EXPECT_NE(br.find(std::string(5000, 'p')), std::string::npos);
  const std::string both = get("Accept-Encoding: gzip, deflate, br\r\n");
  EXPECT_NE(both.find("Content-Encoding: gzip"), std::string::npos) << both.substr(0, 300);
}

// A chunked request is the connection's last (the library reads a chunk
// without its trailing CRLF as complete, and what follows must not become a
// request), and a multipart body is a 415, not the library's form parser.
TEST_F(HttpServerTest, ChunkedRequestEndsTheConnectionAndFormsAre415) {
  Start();
  int fd = Connect();
  SendAll(fd, "POST /echo_size HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
              "2\r\n{}X\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string r = ReadAll(fd, milliseconds(3000));
  ::close(fd);
  size_t responses = 0;
  for (size_t at = r.find("HTTP/1.1 "); at != std::string::npos; at = r.find("HTTP/1.1 ", at + 1)) ++responses;
  EXPECT_EQ(responses, 1u) << r;
  EXPECT_EQ(r.find("\r\n\r\nok"), std::string::npos) << r;  // GET /ok was not served
  fd = Connect();
  const std::string form = "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nb\r\n--x--\r\n";
  SendAll(fd, "POST /echo_size HTTP/1.1\r\nHost: x\r\nContent-Type: Multipart/Form-Data; boundary=x\r\n"
              "Content-Length: " + std::to_string(form.size()) + "\r\n\r\n" + form);
  r = ReadAll(fd, milliseconds(3000));
  ::close(fd);
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 415") << r;
}

TEST_F(HttpServerTest, PlainValuesCrossTheAdapter) {
  HttpRoutes routes;
  std::vector<int> finished;
  std::mutex mu;
  routes.Get(R"(/items/(\d+))", [](const HttpRequest& req, HttpResponse& res) {
    res.body = req.method + " id=" + req.path_params.at(0) + " q=" + req.QueryParam("q").value_or("-") +
               " custom=" + req.Header("x-custom") + " from=" + req.remote_addr;
    res.content_type = "text/plain";  // status left unset: 200
    res.headers.Add("X-Handler", "yes");
  });
  routes.Get("/boom", [](const HttpRequest&, HttpResponse&) { throw std::runtime_error("kaboom"); });
  routes.before_send = [](const HttpRequest&, HttpResponse& res) { res.headers.Add("X-Status-Seen", std::to_string(res.status)); };
  routes.on_error = [](const HttpRequest& req, HttpResponse& res) {
    if (res.body.empty()) res.SetBody(res.status, "no " + req.path, "text/plain");
  };
  routes.on_exception = [](const HttpRequest&, HttpResponse& res, const std::string& what) {
    res.SetBody(500, "threw " + what, "text/plain");
  };
  routes.on_finished = [&](const HttpRequest&, const HttpResponse& res) {
    std::lock_guard lock(mu);
    finished.push_back(res.status);
  };
  Start({}, std::move(routes));
  const int fd = Connect();
  SendAll(fd, "GET /items/42?q=a%20b HTTP/1.1\r\nHost: x\r\nX-Custom: v1\r\nConnection: close\r\n\r\n");
  const std::string r = ReadAll(fd);
  ::close(fd);
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 200") << r;
  EXPECT_NE(r.find("GET id=42 q=a b custom=v1 from=127.0.0.1"), std::string::npos) << r;
  EXPECT_NE(r.find("X-Handler: yes"), std::string::npos) << r;
  EXPECT_NE(r.find("X-Status-Seen: 200"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Type: text/plain"), std::string::npos) << r;
  const std::string missing = Get("/nothing/here");
  EXPECT_EQ(missing.substr(0, 12), "HTTP/1.1 404") << missing;
  EXPECT_NE(missing.find("\r\n\r\nno /nothing/here"), std::string::npos) << missing;
  EXPECT_NE(missing.find("X-Status-Seen: 404"), std::string::npos) << missing;
  const std::string boom = Get("/boom");
  EXPECT_EQ(boom.substr(0, 12), "HTTP/1.1 500") << boom;
  EXPECT_NE(boom.find("threw kaboom"), std::string::npos) << boom;
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard lock(mu);
      if (finished.size() >= 3) break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  std::lock_guard lock(mu);
  std::sort(finished.begin(), finished.end());  // each logged as its connection's thread ends it
  EXPECT_EQ(finished, (std::vector<int>{200, 404, 500}));
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
  http_->Stop();
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

TEST(ClientConnectedTest, TrueWithoutAConnection) { EXPECT_TRUE(HttpRequest{}.ClientConnected()); }

}  // namespace
}  // namespace tern::server
