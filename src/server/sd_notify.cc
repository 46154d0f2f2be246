#include "server/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tern::server {

Status NotifyServiceManager(std::string_view state) {
  const char* env = std::getenv("NOTIFY_SOCKET");
  if (env == nullptr || *env == '\0') return Status::Ok();
  const std::string path = env;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // sun_path need not be NUL-terminated when the length is passed explicitly.
  if ((path[0] != '/' && path[0] != '@') || path.size() > sizeof(addr.sun_path))
    return Status::Errorf("NOTIFY_SOCKET={}: expected an absolute path or @abstract name of at most {} bytes", path,
                          sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (path[0] == '@') addr.sun_path[0] = '\0';
  const socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + path.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Errorf("NOTIFY_SOCKET={}: socket: {}", path, std::strerror(errno));
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  const int err = errno;
  ::close(fd);
  if (sent < 0) return Status::Errorf("NOTIFY_SOCKET={}: sendto: {}", path, std::strerror(err));
  if (size_t(sent) != state.size()) return Status::Errorf("NOTIFY_SOCKET={}: sent {} of {} bytes", path, sent, state.size());
  return Status::Ok();
}

}  // namespace tern::server
