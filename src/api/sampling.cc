#include "api/sampling.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "api/py_text.h"

namespace tern::api {
namespace {

constexpr double kSamplingEps = 1e-6;

PyNumber Pick(const std::optional<PyNumber>& requested, const std::optional<double>& model,
              double fallback) {
  if (requested) return *requested;
  if (model) return PyNumber{*model, false};
  return PyNumber{fallback, false};
}

// Python int(str) for a logit_bias key: optional whitespace and sign, digits
// with single underscores between them.
std::optional<int64_t> PyIntLiteral(const std::string& s) {
  size_t i = 0, n = s.size();
  while (i < n && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  while (n > i && std::isspace(static_cast<unsigned char>(s[n - 1]))) --n;
  bool neg = false;
  if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i >= n || !std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
  int64_t value = 0;
  bool prev_digit = false;
  for (; i < n; ++i) {
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (value > (INT64_MAX - 9) / 10) return std::nullopt;
      value = value * 10 + (c - '0');
      prev_digit = true;
    } else if (c == '_' && prev_digit && i + 1 < n &&
               std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      prev_digit = false;
    } else {
      return std::nullopt;
    }
  }
  return neg ? -value : value;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
  return out;
}

}  // namespace

std::string PyNumber::Repr() const {
  if (is_int && std::isfinite(value)) return fmt::format("{:.0f}", value);
  return PyFloatRepr(value);
}

ApiResult<SamplingParams> ResolveSampling(const SamplingRequest& r, const GenerationDefaults& d,
                                          int64_t vocab_size) {
  SamplingParams p;
  PyNumber temperature = Pick(r.temperature, d.temperature, 1.0);
  const PyNumber top_p = Pick(r.top_p, d.top_p, 1.0);
  const PyNumber min_p = Pick(r.min_p, d.min_p, 0.0);
  const PyNumber rep = Pick(r.repetition_penalty, d.repetition_penalty, 1.0);
  PyNumber top_k = r.top_k ? *r.top_k
                           : PyNumber{d.top_k ? static_cast<double>(*d.top_k) : -1.0, true};
  // SamplingParams.__post_init__: temperature in [0, eps) means greedy.
  if (temperature.value >= 0 && temperature.value < kSamplingEps) {
    temperature = PyNumber{1.0, false};
    top_k = PyNumber{1, true};
  }
  if (top_k.value == -1) top_k.value = double(1 << 30);  // TOP_K_ALL

  auto bad = [](std::string m) { return ApiError::BadRequest(std::move(m)); };
  if (!std::isfinite(temperature.value) || temperature.value < 0)
    return bad(fmt::format("temperature must be a non-negative finite number, got {}.", temperature.Repr()));
  if (!(top_p.value > 0 && top_p.value <= 1))
    return bad(fmt::format("top_p must be in (0, 1], got {}.", top_p.Repr()));
  if (!(min_p.value >= 0 && min_p.value <= 1))
    return bad(fmt::format("min_p must be in [0, 1], got {}.", min_p.Repr()));
  if (!(top_k.value >= 1) || top_k.value != std::floor(top_k.value))
    return bad(fmt::format("top_k must be -1 (disable) or at least 1, got {}.", top_k.Repr()));
  if (!(r.frequency_penalty.value >= -2 && r.frequency_penalty.value <= 2))
    return bad(fmt::format("frequency_penalty must be in [-2, 2], got {}.", r.frequency_penalty.Repr()));
  if (!(r.presence_penalty.value >= -2 && r.presence_penalty.value <= 2))
    return bad(fmt::format("presence_penalty must be in [-2, 2], got {}.", r.presence_penalty.Repr()));
  if (!(rep.value > 0 && rep.value <= 2))
    return bad(fmt::format("repetition_penalty must be in (0, 2] (1.0 = no penalty), got {}.", rep.Repr()));
  if (r.min_new_tokens < 0)
    return bad(fmt::format("min_new_tokens must be in [0, max_new_tokens], got {}.", r.min_new_tokens));
  if (r.max_new_tokens) {
    if (*r.max_new_tokens < 0)
      return bad(fmt::format("max_new_tokens must be at least 0, got {}.", *r.max_new_tokens));
    if (r.min_new_tokens > *r.max_new_tokens)
      return bad(fmt::format("min_new_tokens must be in [0, max_new_tokens({})], got {}.",
                             *r.max_new_tokens, r.min_new_tokens));
  }
  for (const auto& [key, bias] : r.logit_bias) {
    const std::optional<int64_t> id = PyIntLiteral(key);
    if (!id) return bad(fmt::format("invalid literal for int() with base 10: {}", PyStrRepr(key)));
    if (*id < 0 || *id >= vocab_size)
      return bad(fmt::format("logit_bias must has keys in [0, {}], got {}.", vocab_size - 1, key));
    p.logit_bias.emplace_back(static_cast<int32_t>(*id), static_cast<float>(bias));
  }

  p.max_new_tokens = r.max_new_tokens;
  p.temperature = temperature.value;
  p.top_p = top_p.value;
  p.top_k = top_k.value >= double(1 << 30) ? -1 : static_cast<int64_t>(top_k.value);
  p.min_p = min_p.value;
  p.presence_penalty = r.presence_penalty.value;
  p.frequency_penalty = r.frequency_penalty.value;
  p.repetition_penalty = rep.value;
  p.min_new_tokens = r.min_new_tokens;
  p.stop = r.stop;
  p.stop_token_ids = r.stop_token_ids;
  p.ignore_eos = r.ignore_eos;
  p.skip_special_tokens = r.skip_special_tokens;
  p.no_stop_trim = r.no_stop_trim;
  p.seed = r.seed;
  p.n = r.n;
  p.constraint = r.constraint;
  return p;
}

ContextCheck CheckContextLength(int64_t input_tokens, std::optional<int64_t> max_new_tokens,
                                int64_t context_length, bool allow_auto_truncate) {
  ContextCheck c;
  c.input_tokens = input_tokens;
  c.max_new_tokens = max_new_tokens;
  if (input_tokens >= context_length) {
    if (!allow_auto_truncate) {
      c.error = ApiError::BadRequest(fmt::format(
          "The input ({} tokens) is longer than the model's context length ({} tokens).",
          input_tokens, context_length));
      return c;
    }
    c.input_tokens = context_length;
  }
  // Compared without the sum: max_new_tokens may be near INT64_MAX.
  if (max_new_tokens && *max_new_tokens > context_length - c.input_tokens) {
    if (!allow_auto_truncate) {
      c.error = ApiError::BadRequest(fmt::format(
          "Requested token count exceeds the model's maximum context length of {} tokens. You "
          "requested a total of {} tokens: {} tokens from the input messages and {} tokens for "
          "the completion. Please reduce the number of tokens in the input messages or the "
          "completion to fit within the limit.",
          context_length, SaturatingAdd(*max_new_tokens, c.input_tokens), c.input_tokens, *max_new_tokens));
      return c;
    }
    c.max_new_tokens = std::max<int64_t>(0, context_length - c.input_tokens);
  }
  return c;
}

}  // namespace tern::api
