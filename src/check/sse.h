// SseParser: splits a text/event-stream body into events as bytes arrive.
//
// Contract (the WHATWG event-stream rules, as far as chat servers use them):
// lines end in \n, \r\n or \r; "data:" lines (one optional space after the
// colon) of one event are joined with \n; "event:" names the event; lines
// starting with ':' are comments; a blank line ends the event. An event that
// has no data is dropped. Bytes after the last blank line are an unfinished
// event: a stream cut off mid-event leaves them in partial().
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tern::check {

struct SseEvent {
  std::string event;  // "" unless an "event:" line named it
  std::string data;
};

class SseParser {
 public:
  // Appends the events completed by `bytes` to *events.
  void Feed(std::string_view bytes, std::vector<SseEvent>* events);
  // True when bytes of an unfinished event (or line) are pending.
  bool HasPartial() const { return !line_.empty() || !data_.empty() || have_data_; }
  // The pending bytes, for error messages.
  std::string partial() const { return data_ + line_; }

 private:
  void Line(std::string_view line, std::vector<SseEvent>* events);

  std::string line_;  // current unfinished line
  bool last_cr_ = false;
  std::string event_;  // current event's name
  std::string data_;   // current event's data so far
  bool have_data_ = false;
};

}  // namespace tern::check
