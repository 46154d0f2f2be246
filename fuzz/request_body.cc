// An HTTP request body for /v1/chat/completions, /v1/completions and
// /generate: ParseJsonBody, then each endpoint's request parser. A chat
// request that parses has its template inputs prepared (both content
// formats) and rendered through the Qwen3 chat template, as the server does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/chat_template_inputs.h"
#include "api/requests.h"
#include "base/mapped_file.h"
#include "template/chat.h"
#include "template/template.h"

namespace {

const tern::jinja::Template* Qwen3() {
  static const auto tpl = [] {
    auto src = tern::ReadFileToString(TERN_SOURCE_DIR "/tests/golden/template/templates/qwen3.jinja");
    if (!src.ok()) std::abort();
    return tern::jinja::Template::Parse(*src);
  }();
  if (!tpl.ok()) std::abort();
  return &*tpl;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern::api;
  auto body = ParseJsonBody(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!body.ok()) return 0;
  ServerLimits limits;
  limits.context_length = 4096;
  auto chat = ParseChatRequest(*body, limits);
  (void)ParseCompletionRequest(*body);
  (void)ParseGenerateRequest(*body);
  if (!chat.ok()) return 0;
  for (auto format : {ContentFormat::kString, ContentFormat::kOpenAi}) {
    ChatTemplateInputs in = PrepareChatTemplateInputs(*chat, format);
    tern::jinja::ChatRenderInput r;
    r.messages = in.messages;
    r.tools = in.tools;
    r.extra_kwargs = in.kwargs;
    r.add_generation_prompt = !in.assistant_prefix.has_value();
    r.bos_token = "";
    r.eos_token = "<|im_end|>";
    tern::jinja::RenderOptions o;
    o.max_output_bytes = 1 << 20;
    o.max_loop_iterations = 100000;
    auto prompt = tern::jinja::RenderChat(*Qwen3(), r, o);
    if (prompt.ok()) (void)PromptOpensReasoning(*prompt);
  }
  return 0;
}
