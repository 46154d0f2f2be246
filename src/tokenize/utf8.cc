#include "tokenize/utf8.h"

#include <cstring>

namespace tern::tok {
namespace {

enum class Scan { kValid, kInvalid, kTruncated };

// Scans the sequence starting at p[i] (p[i] >= 0x80) the way Rust's
// Utf8Chunks does. Returns its kind and stores the number of bytes it covers
// in *len: the whole character when valid, else the maximal subpart
// (always >= 1) that is replaced by one U+FFFD.
Scan ScanNonAscii(const uint8_t* p, size_t n, size_t i, size_t* len) {
  const uint8_t b0 = p[i];
  auto at = [&](size_t k) -> int { return i + k < n ? p[i + k] : -1; };
  auto cont = [](int b) { return b >= 0x80 && b <= 0xBF; };
  size_t width;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    width = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    width = 3;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    width = 4;
  } else {
    *len = 1;
    return Scan::kInvalid;
  }
  // The second byte has a lead-specific range.
  int b1 = at(1);
  bool ok1;
  if (width == 3) {
    ok1 = (b0 == 0xE0) ? (b1 >= 0xA0 && b1 <= 0xBF)
          : (b0 == 0xED) ? (b1 >= 0x80 && b1 <= 0x9F)
                         : cont(b1);
  } else if (width == 4) {
    ok1 = (b0 == 0xF0) ? (b1 >= 0x90 && b1 <= 0xBF)
          : (b0 == 0xF4) ? (b1 >= 0x80 && b1 <= 0x8F)
                         : cont(b1);
  } else {
    ok1 = cont(b1);
  }
  if (!ok1) {
    *len = 1;
    return b1 < 0 ? Scan::kTruncated : Scan::kInvalid;
  }
  for (size_t k = 2; k < width; ++k) {
    int b = at(k);
    if (!cont(b)) {
      *len = k;
      return b < 0 ? Scan::kTruncated : Scan::kInvalid;
    }
  }
  *len = width;
  return Scan::kValid;
}

}  // namespace

size_t FindInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    if (ScanNonAscii(p, n, i, &len) != Scan::kValid) return i;
    i += len;
  }
  return n;
}

void AppendCodePoint(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xC0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

void AppendUtf8Lossy(std::string_view bytes, std::string* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  size_t run_start = 0;  // start of the pending run of valid bytes
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    if (ScanNonAscii(p, n, i, &len) == Scan::kValid) {
      i += len;
      continue;
    }
    out->append(bytes.data() + run_start, i - run_start);
    out->append("\xEF\xBF\xBD");
    i += len;
    run_start = i;
  }
  out->append(bytes.data() + run_start, n - run_start);
}

size_t CompleteUtf8PrefixLength(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  // A truncated sequence can only be found at the end; callers pass short
  // buffers, so a scan from the start is simple and exact.
  size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    if (ScanNonAscii(p, n, i, &len) == Scan::kTruncated) return i;
    i += len;
  }
  return n;
}

}  // namespace tern::tok
