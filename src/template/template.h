// tern's Jinja engine for chat templates: template source + JSON context ->
// string, or a Status that says what went wrong and where.
//
// It renders as Hugging Face transformers does (Jinja2's
// ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the
// loopcontrols extension; tojson = json.dumps(ensure_ascii=False);
// raise_exception(msg); strftime_now(fmt)), byte for byte on real model
// templates (tests/golden/template/).
//
// Usage (parse once, render many times; a Template is immutable and may be
// rendered from several threads at once):
//   TERN_ASSIGN_OR_RETURN(auto tpl, jinja::Template::Parse(source));
//   TERN_ASSIGN_OR_RETURN(std::string prompt, tpl.Render(context));
//
// Errors:
//   - syntax: "template syntax error at line 3, column 14: unexpected '}'"
//   - render: "template error at line 7, column 5: 'dict object' has no attribute 'x'"
//   - raise_exception("msg") in the template: the message exactly, "msg"
//     (what transformers reports, so servers can show it to the client)
//   - limits (RenderOptions): "template error at line ...: template output
//     or value of N bytes exceeds the limit ...".
// The engine has no file, network or environment access: include/import/
// extends are rejected, and the only clock is RenderOptions::now.
//
// JSON mapping: objects become dicts that keep the caller's key order (hence
// nlohmann::ordered_json: with nlohmann::json the keys would already be
// sorted and tojson would print them sorted), arrays lists, integers int
// (int64; larger unsigned values become float), floats float (1.0 prints as
// "1.0"), null none. Absent keys are undefined.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "template/render_options.h"

namespace tern::jinja {

class Template {
 public:
  static Result<Template> Parse(std::string_view source);

  // context: a JSON object whose keys are the template's variables.
  Result<std::string> Render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Template(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace tern::jinja
