// tojson as transformers defines it: Python's json.dumps with
// ensure_ascii=False by default, separators ", " and ": " (",", ": " when
// indenting), keys in insertion order unless sort_keys.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "template/builtins.h"
#include "template/evaluator.h"
#include "template/utf8.h"

namespace tern::jinja {

namespace {

void AppendJsonString(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    size_t len;
    const char32_t cp = utf8::Decode(s, i, &len);
    if (!ensure_ascii) {
      out.append(s, i, len);
    } else {
      char buf[16];
      if (cp >= 0x10000) {
        const char32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      }
      out += buf;
    }
    i += len;
  }
  out += '"';
}

void NewlineIndent(std::string& out, const JsonDumpOptions& o, int level) {
  out += '\n';
  for (int i = 0; i < level; ++i) out += o.indent;
}

}  // namespace

void AppendJson(Evaluator& ev, std::string& out, const Value& v, const JsonDumpOptions& o, int level) {
  if (level > 500) ThrowRender("Circular reference detected");
  ev.CheckSize(out.size());
  switch (v.kind()) {
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Kind::kInt:
      AppendPyStr(out, v);
      return;
    case Kind::kFloat: {
      const double d = v.as_double();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d > 0 ? "Infinity" : "-Infinity";
      } else {
        out += FloatRepr(d);
      }
      return;
    }
    case Kind::kString:
      AppendJsonString(out, v.str(), o.ensure_ascii);
      return;
    case Kind::kList: {
      const auto& items = v.list().items;
      if (items.empty()) {
        out += "[]";
        return;
      }
      ev.Tick(static_cast<int64_t>(items.size()));
      out += '[';
      if (o.has_indent) NewlineIndent(out, o, level + 1);
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) {
          out += o.item_sep;
          if (o.has_indent) NewlineIndent(out, o, level + 1);
        }
        AppendJson(ev, out, items[i], o, level + 1);
      }
      if (o.has_indent) NewlineIndent(out, o, level);
      out += ']';
      return;
    }
    case Kind::kDict: {
      if (v.is_namespace()) break;
      const auto& entries = v.dict().entries;
      if (entries.empty()) {
        out += "{}";
        return;
      }
      ev.Tick(static_cast<int64_t>(entries.size()));
      std::vector<size_t> order(entries.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      if (o.sort_keys) {
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return entries[a].first < entries[b].first; });
      }
      out += '{';
      if (o.has_indent) NewlineIndent(out, o, level + 1);
      bool first = true;
      for (size_t idx : order) {
        if (!first) {
          out += o.item_sep;
          if (o.has_indent) NewlineIndent(out, o, level + 1);
        }
        first = false;
        AppendJsonString(out, entries[idx].first, o.ensure_ascii);
        out += o.key_sep;
        AppendJson(ev, out, entries[idx].second, o, level + 1);
      }
      if (o.has_indent) NewlineIndent(out, o, level);
      out += '}';
      return;
    }
    default:
      break;
  }
  ThrowRender(fmt::format("Object of type {} is not JSON serializable", TypeName(v)));
}

}  // namespace tern::jinja
