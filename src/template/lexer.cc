#include "template/lexer.h"

#include <algorithm>
#include <cstring>

#include "template/error.h"
#include "template/utf8.h"

namespace tern::jinja {

std::string NormalizeNewlines(std::string_view s) {
  // Python str.splitlines() boundaries, joined again with "\n"; a boundary at
  // the very end produces no extra line, which drops one trailing newline.
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\r') {
      out += '\n';
      i += (i + 1 < s.size() && s[i + 1] == '\n') ? 2 : 1;
      continue;
    }
    if (c == '\n' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E) {
      out += '\n';
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t len;
      const char32_t cp = utf8::Decode(s, i, &len);
      if (cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
        out += '\n';
        i += len;
        continue;
      }
    }
    out += static_cast<char>(c);
    ++i;
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsDigitC(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> Run() {
    const size_t n = src_.size();
    while (pos_ < n) {
      const size_t t = FindTagStart(pos_);
      if (t == std::string::npos) {
        EmitText(pos_, std::string_view(src_).substr(pos_));
        break;
      }
      const char kind = src_[t + 1];
      char sign = 0;
      if (t + 2 < n && (src_[t + 2] == '-' || src_[t + 2] == '+')) sign = src_[t + 2];
      std::string_view text = std::string_view(src_).substr(pos_, t - pos_);
      if (sign == '-') {
        text = utf8::Strip(text, nullptr, false, true);
      } else if (sign != '+' && kind != '{') {
        LStripBlock(&text);
      }
      EmitText(pos_, text);
      const size_t body = t + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        LexComment(t, body);
      } else if (kind == '%' && TryRaw(t, body)) {
        // raw block emitted as text
      } else {
        LexTag(t, body, kind == '%');
      }
    }
    Token eof{TokenType::kEof, "", 0, 0};
    SetPos(&eof, src_.size());
    out_.push_back(std::move(eof));
    return std::move(out_);
  }

 private:
  size_t FindTagStart(size_t from) const {
    size_t i = from;
    while (true) {
      i = src_.find('{', i);
      if (i == std::string::npos || i + 1 >= src_.size()) return std::string::npos;
      const char c = src_[i + 1];
      if (c == '{' || c == '%' || c == '#') return i;
      ++i;
    }
  }

  // lstrip_blocks: drop spaces/tabs between the line start and the tag.
  void LStripBlock(std::string_view* text) const {
    const size_t nl = text->rfind('\n');
    const size_t lpos = nl == std::string_view::npos ? 0 : nl + 1;
    if (lpos == 0 && !line_starting_) return;
    const std::string_view tail = text->substr(lpos);
    if (tail.empty()) return;
    for (size_t i = 0; i < tail.size();) {
      size_t len;
      if (!utf8::IsSpace(utf8::Decode(tail, i, &len))) return;
      i += len;
    }
    *text = text->substr(0, lpos);
  }

  void EmitText(size_t at, std::string_view text) {
    if (text.empty()) return;
    Token tok{TokenType::kText, std::string(text)};
    SetPos(&tok, at);
    out_.push_back(std::move(tok));
  }

  // After a tag end: `-` strips all whitespace, trim_blocks one newline.
  void AfterTagEnd(size_t end, char sign, bool trim_newline) {
    pos_ = end;
    if (sign == '-') {
      while (pos_ < src_.size()) {
        size_t len;
        if (!utf8::IsSpace(utf8::Decode(src_, pos_, &len))) break;
        pos_ += len;
      }
    } else if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  void LexComment(size_t tag_start, size_t body) {
    const size_t close = src_.find("#}", body);
    if (close == std::string::npos) Fail(tag_start, "missing end of comment tag");
    char sign = 0;
    if (close > body && (src_[close - 1] == '-' || src_[close - 1] == '+')) sign = src_[close - 1];
    AfterTagEnd(close + 2, sign, true);
  }

  // {% raw %}...{% endraw %}: everything in between is text.
  bool TryRaw(size_t tag_start, size_t body) {
    size_t i = SkipSpace(body);
    if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && IsIdentChar(src_[i + 3]))) return false;
    i = SkipSpace(i + 3);
    char sign = 0;
    if (i < src_.size() && src_[i] == '-') {
      sign = '-';
      ++i;
    }
    if (src_.compare(i, 2, "%}") != 0) return false;
    AfterTagEnd(i + 2, sign, false);
    // Find {%[-+]? endraw [-+]?%}
    size_t search = pos_;
    while (true) {
      const size_t t = src_.find("{%", search);
      if (t == std::string::npos) Fail(tag_start, "missing end of raw directive");
      size_t j = t + 2;
      char open_sign = 0;
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) open_sign = src_[j++];
      j = SkipSpace(j);
      if (src_.compare(j, 6, "endraw") == 0) {
        j = SkipSpace(j + 6);
        char close_sign = 0;
        if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) close_sign = src_[j++];
        if (src_.compare(j, 2, "%}") == 0) {
          std::string_view text = std::string_view(src_).substr(pos_, t - pos_);
          if (open_sign == '-') {
            text = utf8::Strip(text, nullptr, false, true);
          } else if (open_sign != '+') {
            line_starting_ = false;
            LStripBlock(&text);
          }
          EmitText(pos_, text);
          AfterTagEnd(j + 2, close_sign, true);
          return true;
        }
      }
      search = t + 2;
    }
  }

  size_t SkipSpace(size_t i) const {
    while (i < src_.size()) {
      size_t len;
      if (!utf8::IsSpace(utf8::Decode(src_, i, &len))) break;
      i += len;
    }
    return i;
  }

  void LexTag(size_t tag_start, size_t body, bool block) {
    Token begin{block ? TokenType::kBlockBegin : TokenType::kVarBegin, block ? "{%" : "{{"};
    SetPos(&begin, tag_start);
    out_.push_back(std::move(begin));
    size_t i = body;
    std::vector<char> balance;
    while (true) {
      i = SkipSpace(i);
      if (i >= src_.size()) Fail(tag_start, block ? "unexpected end of template, expected end of block tag '%}'" : "unexpected end of template, expected end of print statement '}}'");
      if (balance.empty()) {
        const char* end = block ? "%}" : "}}";
        char sign = 0;
        size_t at = i;
        if ((src_[i] == '-' || (block && src_[i] == '+')) && src_.compare(i + 1, 2, end) == 0) {
          sign = src_[i];
          at = i + 1;
        }
        if (src_.compare(at, 2, end) == 0) {
          Token tok{block ? TokenType::kBlockEnd : TokenType::kVarEnd, end};
          SetPos(&tok, i);
          out_.push_back(std::move(tok));
          AfterTagEnd(at + 2, sign, block);
          return;
        }
      }
      i = LexExprToken(i, &balance);
    }
  }

  size_t LexExprToken(size_t i, std::vector<char>* balance) {
    const char c = src_[i];
    Token tok;
    SetPos(&tok, i);
    if (IsIdentStart(c)) {
      size_t j = i;
      while (j < src_.size() && IsIdentChar(src_[j])) ++j;
      tok.type = TokenType::kName;
      tok.text = src_.substr(i, j - i);
      out_.push_back(std::move(tok));
      return j;
    }
    if (IsDigitC(c)) return LexNumber(i, std::move(tok));
    if (c == '\'' || c == '"') return LexString(i, std::move(tok));
    static const char* kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : kTwo) {
      if (src_.compare(i, 2, op) == 0) {
        tok.type = TokenType::kOp;
        tok.text = op;
        out_.push_back(std::move(tok));
        return i + 2;
      }
    }
    if (std::strchr("+-*/%~<>=.,:|()[]{};", c) != nullptr && c != '\0') {
      if (c == '(' || c == '[' || c == '{') balance->push_back(c);
      if (c == ')' || c == ']' || c == '}') {
        const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (balance->empty()) Fail(i, std::string("unexpected '") + c + "'");
        if (balance->back() != want) {
          Fail(i, std::string("unexpected '") + c + "', expected '" +
                      (balance->back() == '(' ? ")" : balance->back() == '[' ? "]" : "}") + "'");
        }
        balance->pop_back();
      }
      tok.type = TokenType::kOp;
      tok.text = std::string(1, c);
      out_.push_back(std::move(tok));
      return i + 1;
    }
    Fail(i, std::string("unexpected char '") + c + "'");
  }

  size_t LexNumber(size_t i, Token tok) {
    // Integers with 0b/0o/0x prefixes, underscores between digits; floats
    // need digits after the dot, or an exponent. A number right after '.'
    // is an integer attribute (x.0.1 is x[0][1]).
    const bool after_dot = i > 0 && src_[i - 1] == '.';
    auto digits = [&](size_t j, auto pred) {
      while (j < src_.size() && (pred(src_[j]) || (src_[j] == '_' && j + 1 < src_.size() && pred(src_[j + 1])))) ++j;
      return j;
    };
    auto dec = [](char ch) { return ch >= '0' && ch <= '9'; };
    if (src_[i] == '0' && i + 1 < src_.size() && std::strchr("bBoOxX", src_[i + 1]) && src_[i + 1] != '\0') {
      const char p = static_cast<char>(src_[i + 1] | 0x20);
      auto pred = [p](char ch) {
        if (p == 'b') return ch == '0' || ch == '1';
        if (p == 'o') return ch >= '0' && ch <= '7';
        return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
      };
      size_t j = i + 2;
      if (j < src_.size() && src_[j] == '_') ++j;
      const size_t end = digits(j, pred);
      if (end == j) Fail(i, "invalid number literal");
      std::string d;
      for (size_t k = j; k < end; ++k) {
        if (src_[k] != '_') d += src_[k];
      }
      unsigned long long v = 0;
      const int base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
      for (char ch : d) {
        const int dv = ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10;
        if (v > (0x7FFFFFFFFFFFFFFFULL - dv) / base) Fail(i, "integer literal too large");
        v = v * base + dv;
      }
      tok.type = TokenType::kInt;
      tok.text = std::to_string(v);
      out_.push_back(std::move(tok));
      return end;
    }
    size_t j = digits(i, dec);
    bool is_float = false;
    if (!after_dot) {
      if (j + 1 < src_.size() && src_[j] == '.' && dec(src_[j + 1])) {
        j = digits(j + 1, dec);
        is_float = true;
      }
      if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
        size_t k = j + 1;
        if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
        if (k < src_.size() && dec(src_[k])) {
          j = digits(k, dec);
          is_float = true;
        }
      }
    }
    std::string text;
    for (size_t k = i; k < j; ++k) {
      if (src_[k] != '_') text += src_[k];
    }
    tok.type = is_float ? TokenType::kFloat : TokenType::kInt;
    tok.text = std::move(text);
    out_.push_back(std::move(tok));
    return j;
  }

  static int HexVal(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    ch = static_cast<char>(ch | 0x20);
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
  }

  // Python string literal with unicode-escape decoding, as Jinja2 does it.
  size_t LexString(size_t i, Token tok) {
    const char q = src_[i];
    std::string val;
    size_t j = i + 1;
    while (true) {
      if (j >= src_.size()) Fail(i, "unexpected end of string");
      const char c = src_[j];
      if (c == q) break;
      if (c != '\\') {
        val += c;
        ++j;
        continue;
      }
      if (j + 1 >= src_.size()) Fail(i, "unexpected end of string");
      const char e = src_[j + 1];
      j += 2;
      switch (e) {
        case '\n': break;  // line continuation
        case '\\': val += '\\'; break;
        case '\'': val += '\''; break;
        case '"': val += '"'; break;
        case 'a': val += '\a'; break;
        case 'b': val += '\b'; break;
        case 'f': val += '\f'; break;
        case 'n': val += '\n'; break;
        case 'r': val += '\r'; break;
        case 't': val += '\t'; break;
        case 'v': val += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            const int h = j + k < src_.size() ? HexVal(src_[j + k]) : -1;
            if (h < 0) Fail(i, std::string("invalid \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) Fail(i, "invalid unicode escape in string literal");
          j += n;
          utf8::Append(val, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && j < src_.size() && src_[j] >= '0' && src_[j] <= '7'; ++k) {
              cp = cp * 8 + static_cast<uint32_t>(src_[j++] - '0');
            }
            utf8::Append(val, cp);
          } else {
            val += '\\';  // unknown escapes are kept verbatim
            j -= 1;
          }
      }
    }
    tok.type = TokenType::kString;
    tok.text = std::move(val);
    out_.push_back(std::move(tok));
    return j + 1;
  }

  // Tokens come in source order, so the column is counted on from the last
  // position instead of from the line start (linear, not quadratic, on long
  // one-line templates).
  void SetPos(Token* tok, size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line_idx = static_cast<size_t>(it - line_starts_.begin()) - 1;
    tok->line = static_cast<int>(line_idx) + 1;
    size_t from = line_starts_[line_idx];
    size_t col = 0;
    if (pos_cache_line_ == line_idx && pos_cache_off_ <= offset) {
      from = pos_cache_off_;
      col = pos_cache_col_;
    }
    col += utf8::Length(std::string_view(src_).substr(from, offset - from));
    pos_cache_line_ = line_idx;
    pos_cache_off_ = offset;
    pos_cache_col_ = col;
    tok->col = static_cast<int>(col) + 1;
  }
  mutable size_t pos_cache_line_ = SIZE_MAX, pos_cache_off_ = 0, pos_cache_col_ = 0;

  [[noreturn]] void Fail(size_t offset, std::string msg) const {
    Token t;
    SetPos(&t, std::min(offset, src_.size()));
    ThrowSyntax(std::move(msg), t.line, t.col);
  }

  std::string src_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source) {
  Lexer lexer(NormalizeNewlines(source));
  return lexer.Run();
}

}  // namespace tern::jinja
