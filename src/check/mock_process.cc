#include "check/mock_process.h"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace tern::check::testing {

std::string NodeBinary() {
#ifdef TERN_NODE
  return TERN_NODE;
#else
  return "";
#endif
}

MockServer::MockServer(const std::string& mode, const std::vector<std::string>& extra) {
  const char* root = std::getenv("TERN_SOURCE_DIR");
  const std::string script = std::string(root ? root : ".") + "/src/check/testdata/mock_server.mjs";
  const std::string node = NodeBinary();
  if (node.empty()) {
    error_ = "node not found at configure time";
    return;
  }
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) {
    error_ = std::string("pipe: ") + std::strerror(errno);
    return;
  }
  std::vector<std::string> args = {node, script, "--mode", mode, "--lifetime-s", "120"};
  args.insert(args.end(), extra.begin(), extra.end());
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    close(in[1]);
    close(out[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(node.c_str(), argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  stdin_fd_ = in[1];
  if (pid_ < 0) {
    error_ = "fork failed";
    close(out[0]);
    return;
  }
  // Read "PORT n\n", bounded in time.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[128];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);  // the mock writes nothing else
  if (line.rfind("PORT ", 0) == 0) port_ = std::atoi(line.c_str() + 5);
  if (port_ <= 0) error_ = "mock server did not report a port; got '" + line + "'";
}

MockServer::~MockServer() {
  if (stdin_fd_ >= 0) close(stdin_fd_);  // the mock exits when its stdin closes...
  if (pid_ > 0) {
    kill(pid_, SIGTERM);  // ...or on SIGTERM
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

int UnusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

}  // namespace tern::check::testing
