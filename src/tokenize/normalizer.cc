#include "tokenize/normalizer.h"

#include <algorithm>
#include <vector>

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

// utf8proc_map's result, in time linear in the text: utf8proc puts each run
// of combining marks in canonical order by swapping neighbours, quadratic in
// the run ("a" + 20,000 U+0301 + 20,000 U+0316, 80 KB, took 8 s; a request
// body of such marks, weeks). Here each code point is decomposed alone
// (utf8proc_decompose_char, as utf8proc_map does), each run of non-starters
// put in order by a stable sort on its combining class (the order the swaps
// reach: they only swap a pair whose classes are strictly out of order), and
// utf8proc_reencode composes (for NFC / NFKC) and encodes the ordered text,
// its reordering pass then linear on the ordered runs. `text` is valid UTF-8.
Status NormalizeLinear(std::string_view text, utf8proc_option_t options, std::string* out) {
  std::vector<utf8proc_int32_t> cps;
  cps.reserve(text.size() + 16);
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t i = 0;
  const auto n = utf8proc_ssize_t(text.size());
  const auto decompose = utf8proc_option_t((options & ~UTF8PROC_COMPOSE) | UTF8PROC_DECOMPOSE);
  while (i < n) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t len = utf8proc_iterate(p + i, n - i, &cp);
    if (len <= 0) return Status::Errorf("unicode normalization failed: {}", utf8proc_errmsg(len));
    i += len;
    // At most UTF8PROC_DECOMPOSE's longest expansion (18 code points) per call.
    utf8proc_int32_t buf[32];
    int boundclass = 0;
    const utf8proc_ssize_t m = utf8proc_decompose_char(cp, buf, 32, decompose, &boundclass);
    if (m < 0 || m > 32) return Status::Errorf("unicode normalization failed: {}", utf8proc_errmsg(m < 0 ? m : -1));
    cps.insert(cps.end(), buf, buf + m);
  }
  auto ccc = [](utf8proc_int32_t c) { return utf8proc_get_property(c)->combining_class; };
  for (size_t a = 0; a < cps.size();) {
    if (ccc(cps[a]) == 0) {
      ++a;
      continue;
    }
    size_t b = a + 1;
    while (b < cps.size() && ccc(cps[b]) != 0) ++b;
    if (b - a > 1)
      std::stable_sort(cps.begin() + ptrdiff_t(a), cps.begin() + ptrdiff_t(b),
                       [&](utf8proc_int32_t x, utf8proc_int32_t y) { return ccc(x) < ccc(y); });
    a = b;
  }
  // reencode writes UTF-8 over the code points (4 bytes each: room enough).
  const utf8proc_ssize_t m = utf8proc_reencode(cps.data(), utf8proc_ssize_t(cps.size()), options);
  if (m < 0) return Status::Errorf("unicode normalization failed: {}", utf8proc_errmsg(m));
  out->assign(reinterpret_cast<const char*>(cps.data()), size_t(m));
  return Status::Ok();
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
    std::string normalized;
    TERN_RETURN_IF_ERROR(NormalizeLinear(*out, OptionsFor(f), &normalized));
    *out = std::move(normalized);
  }
  return Status::Ok();
}

}  // namespace tern::tok
