// Loading the served model and the cross-cutting HTTP behaviour.
#include <filesystem>

#include <fmt/format.h>

#include "api/parser_detect.h"
#include "api/reasoning_parser.h"
#include "api/tool_parser.h"
#include "chat/vocab_check.h"
#include "api/error_json.h"
#include "api/sampling.h"
#include "server/context.h"
#include "server/http_server.h"
#include "server/http_util.h"
#include "server/log.h"
#include "server/routes.h"

namespace tern::server {

namespace {
// generation_config.json's sampling defaults go into every request that
// leaves them out; one out of range (temperature -1) would make every such
// request a 400. Each invalid one is dropped with a warning naming it, and
// the server starts: the checkpoint's other files are still good.
void DropInvalidGenerationDefaults(GenerationDefaults& g, const std::string& dir) {
  auto check = [&](const char* field, auto& value, auto set) {
    if (!value) return;
    api::GenerationDefaults only;
    set(only, *value);
    auto r = api::ResolveSampling({}, only, /*vocab_size=*/1);
    if (r.ok()) return;
    Log(LogLevel::kWarning, "{}/generation_config.json: ignoring {}: {}", dir, field, r.error().message);
    value.reset();
  };
  check("temperature", g.temperature, [](api::GenerationDefaults& d, double v) { d.temperature = v; });
  check("top_p", g.top_p, [](api::GenerationDefaults& d, double v) { d.top_p = v; });
  check("min_p", g.min_p, [](api::GenerationDefaults& d, double v) { d.min_p = v; });
  check("repetition_penalty", g.repetition_penalty, [](api::GenerationDefaults& d, double v) { d.repetition_penalty = v; });
  check("top_k", g.top_k, [](api::GenerationDefaults& d, int64_t v) { d.top_k = v; });
}
}  // namespace

namespace {

// --reasoning-parser / --tool-call-parser: "auto" reads them off the chat
// template, "none" turns them off; what is chosen is printed, as SGLang users
// would otherwise have to know which flags their model needs.
Status ResolveParsers(ServerContext& ctx) {
  ServeOptions& o = ctx.opts;
  const api::DetectedParsers d = api::DetectParsers(ctx.chat ? ctx.chat->source() : "");
  auto resolve = [](std::string& name, const std::string& detected, const std::string& why, const char* flag,
                    bool known) -> Result<std::string> {
    if (name == "auto") {
      name = detected;
      return fmt::format("{} {} ({})", flag, detected.empty() ? "none" : detected, why);
    }
    if (name == "none") name.clear();
    if (!name.empty() && !known) return Status::Errorf("--{} {}: unknown parser", flag, name);
    return fmt::format("{} {} (from the command line)", flag, name.empty() ? "none" : name);
  };
  TERN_ASSIGN_OR_RETURN(std::string r, resolve(o.reasoning_parser, d.reasoning, d.reasoning_why, "reasoning-parser",
                                               api::ReasoningParserFromName(o.reasoning_parser).has_value()));
  TERN_ASSIGN_OR_RETURN(std::string t, resolve(o.tool_call_parser, d.tool_call, d.tool_call_why, "tool-call-parser",
                                               api::ToolParserFromName(o.tool_call_parser).has_value()));
  Log(LogLevel::kInfo, "{}; {}", r, t);
  return Status::Ok();
}

}  // namespace

Status LoadServerModel(ServerContext& ctx) {
  const std::string& dir = ctx.opts.model_path;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Status::Errorf("model directory {} does not exist", dir);
  TERN_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::FromFile((std::filesystem::path(dir) / "tokenizer.json").string()));
  ctx.tokenizer.emplace(std::move(tok));
  TERN_ASSIGN_OR_RETURN(ctx.tokenizer_config, LoadTokenizerConfig(dir));
  TERN_ASSIGN_OR_RETURN(ctx.generation, LoadGenerationDefaults(dir));
  DropInvalidGenerationDefaults(ctx.generation, dir);
  ChatPromptOptions co;
  // SGLang takes --chat-template as a file path (or one of its built-in
  // names, which tern has none of); tern also takes template text. A value
  // that is neither an existing file nor looks like a template is a typo'd
  // path: an error, not a template that renders the path.
  if (const std::string& t = ctx.opts.chat_template; !t.empty()) {
    std::error_code fec;
    const bool looks_like_text = t.find("{%") != std::string::npos || t.find("{{") != std::string::npos;
    if (!looks_like_text && !std::filesystem::is_regular_file(t, fec))
      return Status::Errorf("--chat-template {}: no such file (and not template text: it has no '{{%' or '{{{{')", t);
  }
  co.template_override = ctx.opts.chat_template;
  if (!ctx.opts.default_chat_template_kwargs.empty()) {
    co.default_kwargs = nlohmann::ordered_json::parse(ctx.opts.default_chat_template_kwargs, nullptr, false);
    if (co.default_kwargs.is_discarded() || !co.default_kwargs.is_object())
      return Status::Error("--default-chat-template-kwargs must be a JSON object");
  }
  auto chat = ChatPrompt::Load(dir, co);
  if (chat.ok()) {
    ctx.chat.emplace(std::move(*chat));
  } else {
    if (!ctx.opts.chat_template.empty()) return chat.status();
    ctx.chat_error = chat.status().message();
    Log(LogLevel::kWarning, "{}; /v1/chat/completions will answer 400", ctx.chat_error);
  }
  TERN_RETURN_IF_ERROR(ResolveParsers(ctx));
  TERN_ASSIGN_OR_RETURN(ctx.model, LoadModel(dir, LoadOptions{.threads = ctx.opts.threads,
                                                               .numerics = ctx.opts.quant_numerics,
                                                               .weight_check = ctx.opts.skip_weight_check
                                                                                   ? WeightCheck::kSkip
                                                                               : ctx.opts.strict_weights
                                                                                   ? WeightCheck::kError
                                                                                   : WeightCheck::kWarn}));
  TERN_RETURN_IF_ERROR(CheckTokenizerFitsModel(*ctx.tokenizer, ctx.model->config().vocab_size, dir));
  ctx.eos_token_ids = ctx.generation.eos_token_ids.empty() ? ctx.model->config().eos_token_ids : ctx.generation.eos_token_ids;
  if (ctx.tokenizer_config.eos_token) {
    auto id = ctx.tokenizer->TokenToId(*ctx.tokenizer_config.eos_token);
    if (id && std::find(ctx.eos_token_ids.begin(), ctx.eos_token_ids.end(), *id) == ctx.eos_token_ids.end())
      ctx.eos_token_ids.push_back(*id);
  }
  return Status::Ok();
}

namespace {
// Constant-time comparison, so the key cannot be guessed byte by byte from timing.
bool SafeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= (unsigned char)(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}
}  // namespace

void InstallMiddleware(HttpServer& http, ServerContext& ctx) {
  http.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    auto pass = [&] {
      // `curl -X POST .../flush_cache` sends neither Content-Length nor a
      // chunked body, which cpp-httplib refuses for POST (RFC 9112 says such a
      // request has an empty body); SGLang's own docs call it that way.
      if (req.method == "POST" && req.path == "/flush_cache" && !req.has_header("Content-Length") &&
          !req.has_header("Transfer-Encoding")) {
        ReplyFlushCache(ctx, res);
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    };
    if (ctx.opts.api_key.empty() || req.method == "OPTIONS" || req.path.rfind("/health", 0) == 0 ||
        req.path.rfind("/metrics", 0) == 0)
      return pass();
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) == 0 && SafeEquals(auth.substr(prefix.size()), ctx.opts.api_key)) return pass();
    res.status = 401;
    res.set_content(api::UnauthorizedBody(), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      ReplyFlatError(res, 404, "Not Found", "NotFoundError", {{"detail", "Not Found"}});
    } else if (res.status == 413) {
      ReplyFlatError(res, 413, "Request body too large", "RequestEntityTooLarge");
    } else if (res.status == 405) {
      ReplyFlatError(res, 405, "Method Not Allowed", "MethodNotAllowed", {{"detail", "Method Not Allowed"}});
    } else if (res.status >= 400) {
      ReplyFlatError(res, res.status, fmt::format("HTTP error {}", res.status));
    }
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    ReplyFlatError(res, 500, "Internal server error: " + what, "InternalServerError");
  });
  http.set_logger([&ctx](const httplib::Request&, const httplib::Response& res) { ctx.CountResponse(res.status); });
}

}  // namespace tern::server
