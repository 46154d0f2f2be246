// NotifyServiceManager against a datagram socket the test binds, as systemd's
// would be: a filesystem path and an abstract name.
#include "server/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace tern::server {
namespace {

// A bound AF_UNIX datagram socket; name "@x" is abstract.
class Listener {
 public:
  explicit Listener(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, name.data(), name.size());
    if (name[0] == '@') a.sun_path[0] = '\0';
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), socklen_t(offsetof(sockaddr_un, sun_path) + name.size())) == 0;
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Listener() { ::close(fd_); }
  bool bound() const { return bound_; }
  std::string Receive() {
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n < 0 ? "<nothing>" : std::string(buf, size_t(n));
  }

 private:
  int fd_ = -1;
  bool bound_ = false;
};

TEST(SdNotify, WithoutNotifySocketSendsNothingAndSucceeds) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_TRUE(NotifyServiceManager("READY=1").ok());
}

TEST(SdNotify, SendsOneDatagramToAPathSocket) {
  const auto dir = std::filesystem::temp_directory_path() / ("tern-sdnotify-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "notify").string();
  Listener l(path);
  ASSERT_TRUE(l.bound());
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  ASSERT_TRUE(NotifyServiceManager("READY=1\nSTATUS=serving").ok());
  EXPECT_EQ(l.Receive(), "READY=1\nSTATUS=serving");
  ASSERT_TRUE(NotifyServiceManager("STOPPING=1").ok());
  EXPECT_EQ(l.Receive(), "STOPPING=1");
  ::unsetenv("NOTIFY_SOCKET");
  std::filesystem::remove_all(dir);
}

TEST(SdNotify, SendsToAnAbstractSocket) {
  const std::string name = "@tern-sdnotify-test-" + std::to_string(::getpid());
  Listener l(name);
  ASSERT_TRUE(l.bound());
  ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
  ASSERT_TRUE(NotifyServiceManager("READY=1").ok());
  EXPECT_EQ(l.Receive(), "READY=1");
  ::unsetenv("NOTIFY_SOCKET");
}

TEST(SdNotify, ErrorsNameTheSocket) {
  ::setenv("NOTIFY_SOCKET", "relative/path", 1);
  Status s = NotifyServiceManager("READY=1");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NOTIFY_SOCKET=relative/path"), std::string::npos) << s.message();
  ::setenv("NOTIFY_SOCKET", "/nonexistent-dir-for-tern/notify", 1);
  s = NotifyServiceManager("READY=1");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("sendto"), std::string::npos) << s.message();
  ::unsetenv("NOTIFY_SOCKET");
}

}  // namespace
}  // namespace tern::server
