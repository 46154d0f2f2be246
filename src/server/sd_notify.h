// systemd's readiness protocol (sd_notify(3)) without libsystemd: one
// datagram of newline-separated assignments ("READY=1", "STOPPING=1",
// "STATUS=...") to the AF_UNIX socket named by $NOTIFY_SOCKET, which the
// service manager sets for Type=notify units. A path starting with '@' is in
// the abstract namespace. Without $NOTIFY_SOCKET (not run by systemd) nothing
// is sent and the call succeeds.
#pragma once

#include <string_view>

#include "base/status.h"

namespace tern::server {

// Sends `state` (e.g. "READY=1\nSTATUS=serving") to $NOTIFY_SOCKET. An error
// names the socket and the reason; it never ends the process (a server that
// cannot notify still serves; systemd then times the start out).
Status NotifyServiceManager(std::string_view state);

}  // namespace tern::server
