// qwen3_coder tool calls:
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
#include <cctype>

#include "api/py_text.h"
#include "api/tag_scan.h"
#include "api/tool_parser_impl.h"

namespace tern::api::internal {
namespace {

constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParamOpen = "<parameter=";
constexpr std::string_view kParamClose = "</parameter>";
constexpr size_t kMaxNameBytes = 256;

class XmlToolParser final : public ToolCallParser {
 public:
  XmlToolParser(std::vector<ToolSpec> tools, ToolCallIdGenerator ids)
      : tools_(std::move(tools)), ids_(std::move(ids)) {}

  ToolParseDelta Push(std::string_view text) override {
    ToolParseDelta out;
    buf_ += text;
    size_t i = 0;
    while (i < buf_.size()) {
      const State before = state_;
      const size_t next = Step(i, &out);
      if (next == i && state_ == before) break;  // the rest is a held-back partial tag
      i = next;
    }
    buf_.erase(0, i);
    if (state_ == State::kParamValue && param_is_string_) StreamValue(&out);
    return out;
  }

  ToolParseDelta Finish() override {
    ToolParseDelta out;
    switch (state_) {
      case State::kText: out.content += buf_; break;
      case State::kBlock:
        if (!block_has_function_) out.content += raw_ + buf_;
        break;
      case State::kRawBlock: out.content += raw_ + buf_; break;
      case State::kFuncName:
        if (!in_block_ || !block_has_function_) out.content += raw_ + name_ + buf_;
        break;
      case State::kFunc:
      case State::kParamName: CloseCall(&out); break;
      case State::kParamValue:
        value_ += buf_;
        FinishParam(&out);
        CloseCall(&out);
        break;
    }
    buf_.clear();
    raw_.clear();
    state_ = State::kText;
    return out;
  }

  bool has_calls() const override { return next_index_ > 0; }

 private:
  enum class State {
    kText,        // content
    kBlock,       // inside <tool_call>, outside a function
    kRawBlock,    // unparseable block, kept for content up to </tool_call>
    kFuncName,    // after "<function="
    kFunc,        // inside a function, outside a parameter
    kParamName,   // after "<parameter="
    kParamValue,  // inside a parameter value
  };

  // Processes buf_ from `i`; returns the next position (buf_.size() when more
  // input is needed, minus any held-back partial tag).
  size_t Step(size_t i, ToolParseDelta* out) {
    const std::string_view rest = std::string_view(buf_).substr(i);
    size_t which = 0;
    switch (state_) {
      case State::kText: {
        const size_t j = FindFirstTag(rest, 0, {kToolCallOpen, kFunctionOpen, kToolCallClose}, &which);
        if (j == std::string_view::npos) {
          const size_t hold = PartialTagSuffix(rest, {kToolCallOpen, kFunctionOpen, kToolCallClose});
          out->content.append(rest.substr(0, rest.size() - hold));
          return buf_.size() - hold;
        }
        out->content.append(rest.substr(0, j));
        if (which == 0) {
          in_block_ = true;
          block_has_function_ = false;
          raw_.assign(kToolCallOpen);
          state_ = State::kBlock;
          return i + j + kToolCallOpen.size();
        }
        if (which == 1) {  // a function without a <tool_call> wrapper
          in_block_ = false;
          block_has_function_ = false;
          raw_.assign(kFunctionOpen);
          name_.clear();
          state_ = State::kFuncName;
          return i + j + kFunctionOpen.size();
        }
        return i + j + kToolCallClose.size();  // stray close tag: dropped
      }
      case State::kBlock: {
        const size_t j = FindFirstTag(rest, 0, {kFunctionOpen, kToolCallClose}, &which);
        if (j == std::string_view::npos) {
          const size_t hold = PartialTagSuffix(rest, {kFunctionOpen, kToolCallClose});
          if (!block_has_function_) raw_.append(rest.substr(0, rest.size() - hold));
          return buf_.size() - hold;
        }
        if (which == 0) {
          if (!block_has_function_) raw_.append(rest.substr(0, j + kFunctionOpen.size()));
          name_.clear();
          state_ = State::kFuncName;
          return i + j + kFunctionOpen.size();
        }
        if (!block_has_function_) {  // an empty or junk block stays content
          out->content += raw_;
          out->content.append(rest.substr(0, j + kToolCallClose.size()));
        }
        EndBlock();
        return i + j + kToolCallClose.size();
      }
      case State::kRawBlock: {
        const size_t j = rest.find(kToolCallClose);
        if (j == std::string_view::npos) {
          const size_t hold = PartialTagSuffix(rest, {kToolCallClose});
          raw_.append(rest.substr(0, rest.size() - hold));
          return buf_.size() - hold;
        }
        out->content += raw_;
        out->content.append(rest.substr(0, j + kToolCallClose.size()));
        EndBlock();
        return i + j + kToolCallClose.size();
      }
      case State::kFuncName: {
        const size_t j = ReadName(rest);
        if (j == std::string_view::npos) return buf_.size();
        if (j == kBadName) {
          // Not a function tag after all.
          if (!in_block_) {
            out->content += raw_ + name_;
            state_ = State::kText;
          } else if (!block_has_function_) {
            raw_ += name_;
            state_ = State::kRawBlock;
          } else {
            state_ = State::kBlock;
          }
          return i + name_len_in_rest_;
        }
        OpenCall(out);
        return i + j + 1;
      }
      case State::kFunc: {
        const size_t j = FindFirstTag(rest, 0, {kParamOpen, kFunctionClose, kToolCallClose}, &which);
        if (j == std::string_view::npos)
          return buf_.size() - PartialTagSuffix(rest, {kParamOpen, kFunctionClose, kToolCallClose});
        if (which == 0) {
          name_.clear();
          state_ = State::kParamName;
          return i + j + kParamOpen.size();
        }
        CloseCall(out);
        if (which == 1) {
          state_ = in_block_ ? State::kBlock : State::kText;
          return i + j + kFunctionClose.size();
        }
        EndBlock();
        return i + j + kToolCallClose.size();
      }
      case State::kParamName: {
        const size_t j = ReadName(rest);
        if (j == std::string_view::npos) return buf_.size();
        if (j == kBadName) {  // not a parameter tag: dropped like other junk
          state_ = State::kFunc;
          return i + name_len_in_rest_;
        }
        param_name_ = name_;
        value_.clear();
        value_sent_ = 0;
        string_open_ = false;
        param_is_string_ = IsStringXmlParameter(param_name_, param_config_);
        state_ = State::kParamValue;
        return i + j + 1;
      }
      case State::kParamValue: {
        const size_t j =
            FindFirstTag(rest, 0, {kParamClose, kParamOpen, kFunctionClose, kToolCallClose}, &which);
        if (j == std::string_view::npos) {
          const size_t hold =
              PartialTagSuffix(rest, {kParamClose, kParamOpen, kFunctionClose, kToolCallClose});
          value_.append(rest.substr(0, rest.size() - hold));
          return buf_.size() - hold;
        }
        value_.append(rest.substr(0, j));
        FinishParam(out);
        state_ = State::kFunc;
        // </parameter> is consumed; the other tags end the value and are
        // handled by kFunc.
        return i + j + (which == 0 ? kParamClose.size() : 0);
      }
    }
    return buf_.size();
  }

  static constexpr size_t kBadName = std::string_view::npos - 1;

  // Reads a tag name up to '>' into name_. Returns the position of '>' in
  // `rest`, npos when more input is needed (all of rest consumed into
  // name_), or kBadName when the name cannot be one (newline, '<', too long);
  // name_len_in_rest_ then says how much of `rest` went into name_.
  size_t ReadName(std::string_view rest) {
    for (size_t k = 0; k < rest.size(); ++k) {
      const char c = rest[k];
      if (c == '>') return k;
      if (c == '\n' || c == '<' || name_.size() >= kMaxNameBytes) {
        name_len_in_rest_ = k;
        return kBadName;
      }
      name_.push_back(c);
    }
    return std::string_view::npos;
  }

  void EndBlock() {
    in_block_ = false;
    block_has_function_ = false;
    raw_.clear();
    state_ = State::kText;
  }

  void OpenCall(ToolParseDelta* out) {
    index_ = next_index_++;
    AppendHeader(out, index_, ids_(), name_);
    param_config_ = XmlParamConfig(tools_, name_);
    json_started_ = false;
    block_has_function_ = true;
    raw_.clear();
    state_ = State::kFunc;
  }

  void CloseCall(ToolParseDelta* out) {
    AppendArgs(out, index_, json_started_ ? "}" : "{}");
    json_started_ = false;
  }

  // `{` or `, ` then the key and ": ".
  std::string MemberPrefix() {
    std::string s = json_started_ ? ", " : "{";
    json_started_ = true;
    AppendPyJsonString(&s, param_name_);
    s += ": ";
    return s;
  }

  // The value with SGLang's trimming of one leading and one trailing "\n".
  std::string_view Trimmed() const {
    std::string_view v(value_);
    if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
    if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    return v;
  }

  // Streams a string-typed value: opens the JSON string once the value can
  // no longer turn out to be "null", and sends what is known not to be the
  // trailing "\n".
  void StreamValue(ToolParseDelta* out) {
    std::string_view v(value_);
    if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
    if (!string_open_) {
      if (v.empty()) return;
      constexpr std::string_view kNull = "null\n";
      bool maybe_null = v.size() <= kNull.size();
      for (size_t k = 0; maybe_null && k < v.size(); ++k)
        maybe_null = std::tolower(static_cast<unsigned char>(v[k])) == kNull[k];
      if (maybe_null) return;
      std::string s = MemberPrefix();
      s.push_back('"');
      AppendArgs(out, index_, s);
      string_open_ = true;
    }
    if (!v.empty() && v.back() == '\n') v.remove_suffix(1);  // maybe the trailing one
    if (v.size() > value_sent_) {
      std::string piece;
      AppendPyJsonString(&piece, v.substr(value_sent_));
      AppendArgs(out, index_, std::string_view(piece).substr(1, piece.size() - 2));
      value_sent_ = v.size();
    }
  }

  void FinishParam(ToolParseDelta* out) {
    const std::string_view v = Trimmed();
    if (string_open_) {
      std::string piece;
      AppendPyJsonString(&piece, v.substr(std::min(value_sent_, v.size())));
      AppendArgs(out, index_, std::string_view(piece).substr(1));  // with the closing quote
    } else {
      AppendArgs(out, index_, MemberPrefix() + ConvertXmlParameter(v, param_name_, param_config_));
    }
    string_open_ = false;
    value_.clear();
  }

  std::vector<ToolSpec> tools_;
  ToolCallIdGenerator ids_;
  State state_ = State::kText;
  std::string buf_;   // unprocessed input
  std::string raw_;   // block text kept for content while the block may be junk
  std::string name_;  // function or parameter name being read
  size_t name_len_in_rest_ = 0;
  bool in_block_ = false;
  bool block_has_function_ = false;
  // The open call.
  int index_ = 0;
  int next_index_ = 0;
  Json param_config_;
  bool json_started_ = false;
  // The open parameter.
  std::string param_name_;
  std::string value_;
  bool param_is_string_ = false;
  bool string_open_ = false;
  size_t value_sent_ = 0;  // bytes of the trimmed value already sent
};

}  // namespace

std::unique_ptr<ToolCallParser> MakeXmlToolParser(std::vector<ToolSpec> tools, ToolCallIdGenerator ids) {
  return std::make_unique<XmlToolParser>(std::move(tools), std::move(ids));
}

}  // namespace tern::api::internal
