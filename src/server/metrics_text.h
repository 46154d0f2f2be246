// Prometheus text exposition of the engine and HTTP metrics, with SGLang's
// metric names and a model_name label on every series.
#pragma once

#include <string>

#include "server/context.h"

namespace tern::server {

std::string RenderPrometheus(ServerContext& ctx);

}  // namespace tern::server
