#include "tokenize/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenize/utf8.h"

namespace tern::tok {
namespace {

// Unicode White_Space, the set Oniguruma's \s matches, as class contents.
constexpr std::string_view kWhiteSpace =
    "\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
    "\\x{202f}\\x{205f}\\x{3000}";
constexpr std::string_view kWord = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
constexpr std::string_view kHex = "0-9a-fA-F";

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::string Pcre2ErrorText(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof(buf));
  if (n < 0) return "PCRE2 error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buf), size_t(n));
}

// One JIT stack per thread, grown up to 8 MiB: long runs of whitespace or
// letters are matched by repeats that may need more than the default 32 KiB.
pcre2_jit_stack* ThreadJitStack(void*) {
  struct Holder {
    pcre2_jit_stack* stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    ~Holder() {
      if (stack) pcre2_jit_stack_free(stack);
    }
  };
  thread_local Holder holder;
  return holder.stack;
}

}  // namespace

Result<std::string> TranslateOnigurumaPattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  size_t class_start = 0;  // index just after '[' or '[^' of the open class
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) return Status::Error("pattern ends with a lone backslash");
      char e = p[i + 1];
      ++i;
      auto shorthand = [&](std::string_view set, bool negated) -> Status {
        if (!in_class) {
          out += negated ? "[^" : "[";
          out += set;
          out += "]";
        } else if (negated) {
          return Status::Errorf("negated shorthand \\{} inside a character class is not supported", e);
        } else {
          out += set;
        }
        return Status::Ok();
      };
      switch (e) {
        case 's': TERN_RETURN_IF_ERROR(shorthand(kWhiteSpace, false)); break;
        case 'S': TERN_RETURN_IF_ERROR(shorthand(kWhiteSpace, true)); break;
        case 'w': TERN_RETURN_IF_ERROR(shorthand(kWord, false)); break;
        case 'W': TERN_RETURN_IF_ERROR(shorthand(kWord, true)); break;
        case 'h': TERN_RETURN_IF_ERROR(shorthand(kHex, false)); break;
        case 'H': TERN_RETURN_IF_ERROR(shorthand(kHex, true)); break;
        case 'u':
          if (i + 4 < p.size() && IsHex(p[i + 1]) && IsHex(p[i + 2]) && IsHex(p[i + 3]) &&
              IsHex(p[i + 4])) {
            out += "\\x{";
            out += p.substr(i + 1, 4);
            out += "}";
            i += 4;
          } else {
            return Status::Error("\\u must be followed by four hex digits");
          }
          break;
        default:
          out += '\\';
          out += e;
      }
      continue;
    }
    if (in_class) {
      if (c == ']' && i > class_start) {
        in_class = false;
      } else if (c == '[') {
        if (i + 1 < p.size() && (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
          // POSIX bracket expression such as [:alpha:]: copy through its end.
          size_t end = p.find(std::string{p[i + 1], ']'}, i + 2);
          if (end == std::string_view::npos) return Status::Error("unterminated POSIX class");
          out += p.substr(i, end + 2 - i);
          i = end + 1;
          continue;
        }
        return Status::Error("nested character classes are not supported");
      }
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out += '^';
        ++i;
      }
      class_start = i + 1;  // a ']' right here is a literal
      continue;
    }
    out += c;
  }
  if (in_class) return Status::Error("unterminated character class");
  return out;
}

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  pcre2_match_context* mctx = nullptr;
  bool jit = false;
  ~Compiled() {
    if (mctx) pcre2_match_context_free(mctx);
    if (code) pcre2_code_free(code);
  }
};

Result<Regex> Regex::Build(std::string pcre_pattern, uint32_t extra_options,
                          std::string_view shown_as) {
  auto compiled = std::make_shared<Compiled>();
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  // PCRE2_LITERAL admits only a few other options (UCP is meaningless there).
  const uint32_t options = (extra_options & PCRE2_LITERAL)
                               ? PCRE2_UTF | extra_options
                               : PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C | extra_options;
  compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcre_pattern.data()),
                                 pcre_pattern.size(), options, &err, &err_offset, nullptr);
  if (!compiled->code) {
    return Status::Errorf("regex {:?}: {} at offset {}", std::string(shown_as),
                          Pcre2ErrorText(err), size_t(err_offset));
  }
  // Without JIT (not built for this CPU) pcre2_match interprets; same results.
  compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
  compiled->mctx = pcre2_match_context_create(nullptr);
  if (!compiled->mctx) return Status::Error("out of memory creating a PCRE2 match context");
  pcre2_jit_stack_assign(compiled->mctx, &ThreadJitStack, nullptr);
  Regex r;
  r.pattern_ = std::move(pcre_pattern);
  r.code_ = std::move(compiled);
  return r;
}

Result<Regex> Regex::Compile(std::string_view onig_pattern) {
  TERN_ASSIGN_OR_RETURN(std::string translated, TranslateOnigurumaPattern(onig_pattern));
  return Build(std::move(translated), 0, onig_pattern);
}

Result<Regex> Regex::Literal(std::string_view text) {
  if (text.empty()) return Status::Error("empty literal split pattern");
  return Build(std::string(text), PCRE2_LITERAL, text);
}

Status Regex::FindAll(std::string_view text, std::vector<MatchSpan>* matches) const {
  if (!code_) return Status::Error("regex used before it was compiled");
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  if (!md) return Status::Error("out of memory creating PCRE2 match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t last_end = 0;
  size_t last_match_end = SIZE_MAX;
  Status status;
  while (last_end <= n) {
    // pcre2_jit_match skips pcre2_match's per-call checks (the subject was
    // validated once by the caller).
    int rc = code_->jit
                 ? pcre2_jit_match(code_->code, subject, n, last_end, 0, md, code_->mctx)
                 : pcre2_match(code_->code, subject, n, last_end, PCRE2_NO_UTF_CHECK, md,
                               code_->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      status = Status::Errorf("regex match failed at byte {}: {}", last_end, Pcre2ErrorText(rc));
      break;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (s == e && e == last_match_end) {
      // Oniguruma's find_iter: no empty match right after the previous one;
      // step over one character and search again.
      last_end += last_end < n ? Utf8SequenceLength(uint8_t(text[last_end])) : 1;
      continue;
    }
    last_end = e;
    last_match_end = e;
    matches->emplace_back(uint32_t(s), uint32_t(e));
  }
  pcre2_match_data_free(md);
  return status;
}

}  // namespace tern::tok
