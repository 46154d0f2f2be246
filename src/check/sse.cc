#include "check/sse.h"

namespace tern::check {

void SseParser::Feed(std::string_view bytes, std::vector<SseEvent>* events) {
  for (char c : bytes) {
    if (c == '\n' && last_cr_) {  // the \n of a \r\n pair: the line already ended
      last_cr_ = false;
      continue;
    }
    last_cr_ = (c == '\r');
    if (c == '\n' || c == '\r') {
      std::string line = std::move(line_);
      line_.clear();
      Line(line, events);
    } else {
      line_.push_back(c);
    }
  }
}

void SseParser::Line(std::string_view line, std::vector<SseEvent>* events) {
  if (line.empty()) {  // blank line: dispatch
    if (have_data_) events->push_back(SseEvent{std::move(event_), std::move(data_)});
    event_.clear();
    data_.clear();
    have_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive)
  std::string_view field = line, value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (have_data_) data_.push_back('\n');
    data_.append(value);
    have_data_ = true;
  } else if (field == "event") {
    event_ = std::string(value);
  }
  // id:, retry: and unknown fields are ignored.
}

}  // namespace tern::check
