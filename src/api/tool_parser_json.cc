// qwen25 / hermes tool calls: <tool_call>{"name": ..., "arguments": ...}</tool_call>.
#include "api/json_stream.h"
#include "api/tag_scan.h"
#include "api/tool_parser_impl.h"

namespace tern::api::internal {
namespace {

class JsonToolParser final : public ToolCallParser {
 public:
  JsonToolParser(std::vector<ToolSpec> tools, ToolCallIdGenerator ids)
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
    FlushArgs(&out);
    return out;
  }

  ToolParseDelta Finish() override {
    ToolParseDelta out;
    switch (state_) {
      case State::kText: out.content += buf_; break;
      case State::kBlockStart:
      case State::kRawBlock: out.content += raw_ + buf_; break;
      case State::kJson:
        json_.Finish();
        if (emitted_) FlushArgs(&out);
        else out.content += raw_ + buf_;
        break;
      case State::kSkipBlock:
      case State::kAfterJson: break;
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
    kBlockStart,  // after <tool_call>, before the JSON's first byte
    kJson,        // inside the call's JSON object
    kAfterJson,   // object complete, waiting for </tool_call>
    kRawBlock,    // unparseable block: kept for content up to </tool_call>
    kSkipBlock,   // broken after the call was emitted: dropped up to </tool_call>
  };

  // Processes buf_ from `i`; returns the new position (buf_.size() when it
  // needs more input; bytes held back stay in buf_).
  size_t Step(size_t i, ToolParseDelta* out) {
    const std::string_view rest = std::string_view(buf_).substr(i);
    switch (state_) {
      case State::kText: {
        size_t which = 0;
        const size_t j = FindFirstTag(rest, 0, {kToolCallOpen, kToolCallClose}, &which);
        if (j == std::string_view::npos) {
          const size_t hold = PartialTagSuffix(rest, {kToolCallOpen, kToolCallClose});
          out->content.append(rest.substr(0, rest.size() - hold));
          return buf_.size() - hold;
        }
        out->content.append(rest.substr(0, j));
        if (which == 1) return i + j + kToolCallClose.size();  // stray close tag
        StartBlock();
        return i + j + kToolCallOpen.size();
      }
      case State::kBlockStart: {
        const char c = rest[0];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
          raw_.push_back(c);
          return i + 1;
        }
        if (c != '{') {
          state_ = State::kRawBlock;
          return i;
        }
        state_ = State::kJson;
        return i;
      }
      case State::kJson: {
        const char c = rest[0];
        raw_.push_back(c);
        if (!json_.Push(c)) {
          // Not JSON any more: let the block scanner see this byte again.
          raw_.pop_back();
          state_ = emitted_ ? State::kSkipBlock : State::kRawBlock;
          if (emitted_) FlushArgs(out);
          return i;
        }
        OnJsonEvents(out);
        if (json_.done()) {
          if (!emitted_) {
            if (NameValid()) {
              EmitHeader(out);
              AppendArgs(out, index_, args_end_ ? std::string_view(json_.out()).substr(args_begin_, *args_end_ - args_begin_)
                                                : std::string_view("{}"));
              args_sent_ = args_end_ ? *args_end_ : args_begin_;
            } else {
              state_ = State::kRawBlock;
              return i + 1;
            }
          }
          FlushArgs(out);
          state_ = State::kAfterJson;
        }
        return i + 1;
      }
      case State::kAfterJson: {
        size_t which = 0;
        const size_t j = FindFirstTag(rest, 0, {kToolCallClose, kToolCallOpen}, &which);
        if (j == std::string_view::npos)
          return buf_.size() - PartialTagSuffix(rest, {kToolCallClose, kToolCallOpen});
        if (which == 1) {  // a new call without </tool_call> before it
          StartBlock();
          return i + j + kToolCallOpen.size();
        }
        state_ = State::kText;
        return i + j + kToolCallClose.size();
      }
      case State::kRawBlock:
      case State::kSkipBlock: {
        const size_t j = rest.find(kToolCallClose);
        if (j == std::string_view::npos) {
          const size_t hold = PartialTagSuffix(rest, {kToolCallClose});
          if (state_ == State::kRawBlock) raw_.append(rest.substr(0, rest.size() - hold));
          return buf_.size() - hold;
        }
        if (state_ == State::kRawBlock) {
          out->content += raw_;
          out->content.append(rest.substr(0, j + kToolCallClose.size()));
        }
        raw_.clear();
        state_ = State::kText;
        return i + j + kToolCallClose.size();
      }
    }
    return buf_.size();
  }

  void StartBlock() {
    state_ = State::kBlockStart;
    raw_.assign(kToolCallOpen);
    json_ = JsonStreamWriter();
    emitted_ = false;
    name_.reset();
    args_key_depth_pending_ = false;
    args_begin_ = 0;
    args_end_.reset();
    args_begun_ = false;
    name_begin_ = 0;
  }

  void OnJsonEvents(ToolParseDelta* out) {
    for (const auto& e : json_.events()) {
      if (e.depth != 1) continue;
      if (e.kind == JsonStreamWriter::EventKind::kKey) {
        current_key_ = json_.key();
      } else if (e.kind == JsonStreamWriter::EventKind::kValueBegin) {
        if (current_key_ == "name") name_begin_ = e.offset;
        if ((current_key_ == "arguments" || current_key_ == "parameters") && !args_begun_) {
          args_begun_ = true;
          args_begin_ = e.offset;
          args_sent_ = e.offset;
          args_is_key_ = current_key_;
        }
      } else if (e.kind == JsonStreamWriter::EventKind::kValueEnd) {
        if (current_key_ == "name") {
          const Json v = Json::parse(json_.out().substr(name_begin_, e.offset - name_begin_), nullptr, false);
          name_ = v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
        }
        if (args_begun_ && !args_end_ && current_key_ == args_is_key_) args_end_ = e.offset;
      }
    }
    if (!emitted_ && args_begun_ && NameValid()) EmitHeader(out);
  }

  bool NameValid() const {
    if (!name_) return false;
    for (const auto& t : tools_)
      if (t.name == *name_) return true;
    return false;
  }

  void EmitHeader(ToolParseDelta* out) {
    emitted_ = true;
    index_ = next_index_++;
    AppendHeader(out, index_, ids_(), *name_);
  }

  // Sends the arguments written since the last flush.
  void FlushArgs(ToolParseDelta* out) {
    if (!emitted_ || !args_begun_) return;
    const size_t end = args_end_ ? *args_end_ : json_.out().size();
    if (end > args_sent_) {
      AppendArgs(out, index_, std::string_view(json_.out()).substr(args_sent_, end - args_sent_));
      args_sent_ = end;
    }
  }

  std::vector<ToolSpec> tools_;
  ToolCallIdGenerator ids_;
  State state_ = State::kText;
  std::string buf_;  // unprocessed input
  std::string raw_;  // the current block's text, for content if unparseable
  JsonStreamWriter json_;
  std::string current_key_;
  std::optional<std::string> name_;
  size_t name_begin_ = 0;
  bool args_begun_ = false;
  bool args_key_depth_pending_ = false;
  std::string args_is_key_;
  size_t args_begin_ = 0;
  std::optional<size_t> args_end_;
  size_t args_sent_ = 0;
  bool emitted_ = false;
  int index_ = 0;
  int next_index_ = 0;
};

}  // namespace

std::unique_ptr<ToolCallParser> MakeJsonToolParser(std::vector<ToolSpec> tools, ToolCallIdGenerator ids) {
  return std::make_unique<JsonToolParser>(std::move(tools), std::move(ids));
}

}  // namespace tern::api::internal
