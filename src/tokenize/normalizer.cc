#include "tokenize/normalizer.h"

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "tokenize/utf8.h"

namespace tern::tok {
namespace {

Status AppendForms(const nlohmann::json& j, std::vector<Normalizer::Form>* forms) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return Status::Error("normalizer: expected an object with a string \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "NFC") {
    forms->push_back(Normalizer::Form::kNfc);
  } else if (type == "NFD") {
    forms->push_back(Normalizer::Form::kNfd);
  } else if (type == "NFKC") {
    forms->push_back(Normalizer::Form::kNfkc);
  } else if (type == "NFKD") {
    forms->push_back(Normalizer::Form::kNfkd);
  } else if (type == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array()) {
      return Status::Error("normalizer Sequence: missing \"normalizers\" array");
    }
    for (const auto& sub : j["normalizers"]) TERN_RETURN_IF_ERROR(AppendForms(sub, forms));
  } else {
    return Status::Errorf("normalizer type {:?} is not supported", type);
  }
  return Status::Ok();
}

utf8proc_option_t OptionsFor(Normalizer::Form f) {
  auto base = utf8proc_option_t(UTF8PROC_STABLE);
  switch (f) {
    case Normalizer::Form::kNfc: return utf8proc_option_t(base | UTF8PROC_COMPOSE);
    case Normalizer::Form::kNfd: return utf8proc_option_t(base | UTF8PROC_DECOMPOSE);
    case Normalizer::Form::kNfkc:
      return utf8proc_option_t(base | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case Normalizer::Form::kNfkd:
      return utf8proc_option_t(base | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  return base;
}

}  // namespace

bool IsNfcStableCodePoint(char32_t cp) {
  // Starters (combining class 0) that NFC maps to themselves and that never
  // compose with a neighbour as the second character: below U+0300 (Latin,
  // IPA), kana without the combining voicing marks, CJK symbols before the
  // combining tone marks, CJK ideographs, Hangul syllables, fullwidth and
  // halfwidth forms. normalizer_test checks this against utf8proc. A
  // neighbour outside these ranges makes the caller normalize for real.
  return cp < 0x300 || (cp >= 0x3000 && cp <= 0x3029) ||
         (cp >= 0x3041 && cp <= 0x30FF && cp != 0x3099 && cp != 0x309A) ||
         (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
         (cp >= 0xFF01 && cp <= 0xFFEE);
}

bool IsNfcStable(std::string_view s) {
  size_t i = 0;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  while (i < s.size()) {
    if (p[i] < 0xCC) {  // ASCII, a continuation byte, or a 2-byte lead below U+0300
      ++i;
      continue;
    }
    size_t next = i;
    if (!IsNfcStableCodePoint(NextCodePoint(s, &next))) return false;
    i = next;
  }
  return true;
}

Result<Normalizer> Normalizer::FromJson(const nlohmann::json& j) {
  Normalizer n;
  TERN_RETURN_IF_ERROR(AppendForms(j, &n.forms_));
  return n;
}

Status Normalizer::Apply(std::string_view text, std::string* out) const {
  out->assign(text);
  for (Form f : forms_) {
    if (f == Form::kNfc && IsNfcStable(*out)) continue;
    utf8proc_uint8_t* dst = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(out->data()),
                                      utf8proc_ssize_t(out->size()), &dst, OptionsFor(f));
    if (n < 0) {
      return Status::Errorf("unicode normalization failed: {}", utf8proc_errmsg(n));
    }
    out->assign(reinterpret_cast<const char*>(dst), size_t(n));
    std::free(dst);
  }
  return Status::Ok();
}

}  // namespace tern::tok
