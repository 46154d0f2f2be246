// Semantic checks over longer inputs: recall across turns, retrieval from a long context.
#include <fmt/format.h>

#include <algorithm>

#include "check/checks_common.h"

namespace tern::check {
namespace {

constexpr const char* kAdjectives[] = {"quiet",  "amber",  "distant", "narrow",    "silver", "patient", "crooked",
                                       "gentle", "hollow", "bright",  "weathered", "lonely", "curious", "steady"};
constexpr const char* kNouns[] = {"lighthouse",  "orchard", "ferry", "library",  "meadow", "harbor", "caravan",
                                  "observatory", "bakery",  "canal", "workshop", "garden", "bridge", "market"};
constexpr const char* kVerbs[] = {"watched over", "leaned toward", "remembered", "sheltered",  "echoed",
                                  "outlasted",    "overlooked",    "welcomed",   "surrounded", "followed"};
constexpr const char* kPlaces[] = {"the northern hills", "an old stone wall",    "the river bend",   "a foggy valley",
                                   "the edge of town",   "a row of cedar trees", "the empty square", "the coast road"};

template <size_t N>
const char* Pick(const char* const (&words)[N], uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return words[(*state >> 16) % N];
}

std::string Sentence(uint32_t* s) {
  std::string a = Pick(kAdjectives, s);
  a[0] = static_cast<char>(a[0] - 'a' + 'A');
  return fmt::format("The {} {} {} the {} {} near {}. ", a, Pick(kNouns, s), Pick(kVerbs, s), Pick(kAdjectives, s),
                     Pick(kNouns, s), Pick(kPlaces, s));
}

}  // namespace

std::string BuildLongContextPrompt(int tokens) {
  // About 4 characters per token for plain English words.
  const size_t chars = static_cast<size_t>(std::max(tokens, 64)) * 4;
  const std::string fact = fmt::format("The access code for the blue vault is {}. ", prompts::kVaultCode);
  uint32_t state = 12345;
  std::string filler;
  bool placed = false;
  while (filler.size() < chars) {
    if (!placed && filler.size() >= chars * 6 / 10) {
      filler += fact;
      placed = true;
    }
    filler += Sentence(&state);
  }
  if (!placed) filler += fact;
  return "Read the following notes carefully.\n\n" + filler +
         "\n\nWhat is the access code for the blue vault? Reply with the number only.";
}

CheckResult RunMultiTurnRecall(CheckContext& ctx) {
  nlohmann::json messages = nlohmann::json::array();
  const std::string turns[] = {fmt::format("Remember this code word: {}. Reply with just 'Noted.'", prompts::kCodeWord),
                               "What is the capital of France? Answer in one word.",
                               "What was the code word I asked you to remember? Reply with the code word only."};
  ChatResult r;
  double total = 0;
  for (int t = 0; t < 3; ++t) {
    messages.push_back({{"role", "user"}, {"content", turns[t]}});
    r = ctx.Chat({.messages = messages, .max_tokens = 24, .thinking = Thinking::kOff});
    total += r.latency_s;
    if (!r.ok()) return MakeResult(Verdict::Fail(fmt::format("turn {}: {}", t + 1, r.failure)), &r);
    if (t < 2) messages.push_back({{"role", "assistant"}, {"content", r.ContentOr()}});
  }
  CheckResult c = MakeResult(JudgeContains(r, prompts::kCodeWord, "code word"), &r);
  c.metrics["total_latency_s"] = total;
  return c;
}

CheckResult RunLongContext(CheckContext& ctx) {
  int tokens = ctx.options().long_context_tokens;
  std::string note;
  if (auto n = ctx.server().context_length) {
    const int64_t room = *n - 256;  // question, template and answer
    if (room < 256) {
      CheckResult c;
      c.outcome = Outcome::kSkip;
      c.detail = fmt::format("context length {} is too small for the test", *n);
      return c;
    }
    if (tokens > room) {
      note = fmt::format(" (filler cut from {} to {} tokens to fit context {})", tokens, room, *n);
      tokens = static_cast<int>(room);
    }
  }
  ChatRequest req{
      .messages = UserMessage(BuildLongContextPrompt(tokens)), .max_tokens = 32, .thinking = Thinking::kOff};
  ChatResult r = ctx.Chat(req);
  CheckResult c = MakeResult(JudgeContains(r, prompts::kVaultCode, "access code"), &r);
  if (r.prompt_tokens) {
    c.detail += fmt::format(" from a {}-token prompt", *r.prompt_tokens);
    c.metrics["prompt_tokens"] = *r.prompt_tokens;
  }
  c.detail += note;
  return c;
}

}  // namespace tern::check
