// MockServer: runs testdata/mock_server.mjs on a free 127.0.0.1 port for the
// length of a test (test code only).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tern::check::testing {

class MockServer {
 public:
  // Starts `node mock_server.mjs --mode <mode> <extra...>` and waits (at most
  // 15 s) for its "PORT n" line. ok() is false, with error(), when it failed.
  explicit MockServer(const std::string& mode, const std::vector<std::string>& extra = {});
  ~MockServer();
  MockServer(const MockServer&) = delete;
  MockServer& operator=(const MockServer&) = delete;

  bool ok() const { return port_ > 0; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int port_ = 0;
  std::string error_;
};

// The node binary this build found (empty when none).
std::string NodeBinary();

// A loopback port with nothing listening on it (bound, then released).
int UnusedPort();

}  // namespace tern::check::testing
