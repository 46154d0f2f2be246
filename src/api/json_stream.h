// JsonStreamWriter: reads one JSON value byte by byte and writes it out
// again in the form Python's json.dumps(json.loads(text), ensure_ascii=False)
// would give (", " and ": " separators, strings re-escaped, floats in repr
// form, "-0" as "0"), as far as the input has arrived.
//
// Streaming tool-call parsers use it to send tool arguments piece by piece
// while guaranteeing that the pieces join into exactly the string SGLang
// builds once the call is complete. It reports where values start and end
// in out(), so a caller can cut one member's value out of a larger object.
//
// Input is UTF-8 text (tool-call text from the detokenizer); bytes of
// string contents are copied through, so invalid UTF-8 stays invalid.
// Leniency, where json.loads would fail: raw control characters inside
// strings are accepted (and escaped); a lone UTF-16 surrogate escape becomes
// U+FFFD (Python would keep the surrogate, which is not valid UTF-8 and which
// strict JSON parsers reject). Everything else that is not JSON
// is a syntax error: failed() turns true and further input is ignored.
// Nesting deeper than 512 levels is an error too.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tern::api {

class JsonStreamWriter {
 public:
  enum class EventKind {
    kKey,         // an object key completed (key() holds it, decoded)
    kValueBegin,  // a value starts; offset = out() position of its first byte
    kValueEnd,    // a value completed; offset = out() position after it
  };
  struct Event {
    EventKind kind;
    int depth;  // containers enclosing the key/value: 0 for the top value
    size_t offset;
  };

  // Processes one byte; returns false once the input is not JSON.
  bool Push(char c);
  // End of input: completes a top-level number. Returns done().
  bool Finish();

  bool done() const { return done_; }
  bool failed() const { return failed_; }
  // Canonical text of the value so far. Bytes of an unfinished number or
  // literal are not written until the token completes.
  const std::string& out() const { return out_; }
  // Events raised by the last Push/Finish call, in order.
  const std::vector<Event>& events() const { return events_; }
  // The most recent object key, decoded.
  const std::string& key() const { return key_; }
  int depth() const { return static_cast<int>(stack_.size()); }

 private:
  enum class Ctx { kObject, kArray };
  enum class Expect {
    kValue,           // a value (top level, after ':' or after ',' in arrays)
    kValueOrClose,    // after '['
    kKeyOrClose,      // after '{'
    kKey,             // after ',' in an object
    kColon,           // after a key
    kCommaOrClose,    // after a member/element
  };
  enum class Scalar { kNone, kString, kKeyString, kNumber, kLiteral };

  bool Fail();
  bool StartValue(char c);
  void EndValue();
  bool PushStringByte(char c);
  void WriteCodePoint(unsigned cp, bool lone_surrogate);
  bool FinishNumber();

  std::string out_;
  std::vector<Event> events_;
  std::vector<Ctx> stack_;
  Expect expect_ = Expect::kValue;
  Scalar scalar_ = Scalar::kNone;
  bool done_ = false;
  bool failed_ = false;
  std::string key_;
  std::string token_;   // number or literal being read
  const char* literal_ = nullptr;
  // String escape state.
  bool escape_ = false;
  int hex_left_ = 0;
  unsigned hex_value_ = 0;
  unsigned high_surrogate_ = 0;  // pending \uD800-\uDBFF
  bool expect_low_backslash_ = false;
  bool expect_low_u_ = false;
};

}  // namespace tern::api
