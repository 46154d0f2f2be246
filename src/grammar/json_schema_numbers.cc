#include "grammar/json_schema_numbers.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace tern::grammar::internal {
namespace {

constexpr int64_t kInf = INT64_MAX;

std::string Digit(char lo, char hi) {
  if (lo == hi) return fmt::format("\"{}\"", lo);
  return fmt::format("[{}-{}]", lo, hi);
}

// Decimal strings of equal length, lo <= hi.
std::string SameLength(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return "";
  const std::string rest_lo = lo.substr(1), rest_hi = hi.substr(1);
  if (lo[0] == hi[0]) {
    const std::string tail = SameLength(rest_lo, rest_hi);
    return Digit(lo[0], lo[0]) + (tail.empty() ? "" : " " + tail);
  }
  const size_t n = rest_lo.size();
  const std::string zeros(n, '0'), nines(n, '9');
  auto any = [&](char a, char b) { return Digit(a, b) + (n ? fmt::format(" [0-9]{{{}}}", n) : ""); };
  if (rest_lo == zeros && rest_hi == nines) return any(lo[0], hi[0]);
  std::vector<std::string> alts;
  char first = lo[0], last = hi[0];
  if (rest_lo != zeros) {
    alts.push_back("(" + Digit(lo[0], lo[0]) + " " + SameLength(rest_lo, nines) + ")");
    ++first;
  }
  if (rest_hi != nines) --last;
  if (first <= last) alts.push_back("(" + any(first, last) + ")");
  if (rest_hi != nines) alts.push_back("(" + Digit(hi[0], hi[0]) + " " + SameLength(zeros, rest_hi) + ")");
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Non-negative integers in [lo, hi] (hi kInf: unbounded), no leading zeros.
std::string NonNegative(int64_t lo, int64_t hi) {
  if (lo > hi) return "";
  std::vector<std::string> alts;
  const std::string ls = std::to_string(lo);
  const size_t hl = hi == kInf ? ls.size() : std::to_string(hi).size();
  for (size_t len = ls.size(); len <= hl; ++len) {
    const std::string a = len == ls.size() ? ls : "1" + std::string(len - 1, '0');
    std::string b = std::string(len, '9');
    if (hi != kInf && len == hl) b = std::to_string(hi);
    if (len == 1 && a == "0") {  // "0" alone, then 1..b
      alts.push_back("\"0\"");
      if (b != "0") alts.push_back(SameLength("1", b));
    } else {
      alts.push_back(SameLength(a, b));
    }
  }
  if (hi == kInf) alts.push_back(fmt::format("([1-9] [0-9]{{{},}})", ls.size()));
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

std::string Join(const std::vector<std::string>& alts) {
  std::vector<std::string> parts;
  for (const auto& a : alts)
    if (!a.empty()) parts.push_back(a);
  if (parts.empty()) return "";
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
  return out + ")";
}

// Numbers x >= 0 written without a sign, with lo <(=) x <(=) hi.
std::string NonNegativeNumber(Bound lo, std::optional<Bound> hi) {
  const std::string any_frac = "(\".\" [0-9]+)?", zero_frac = "(\".\" \"0\"+)?",
                    nonzero_frac = "\".\" [0-9]* [1-9] [0-9]*";
  std::vector<std::string> alts;
  const int64_t all_lo = std::max<int64_t>(0, lo.exclusive ? lo.value + 1 : lo.value);
  const int64_t all_hi = hi ? hi->value - 1 : kInf;
  if (const std::string n = NonNegative(all_lo, all_hi); !n.empty()) alts.push_back(n + " " + any_frac);
  if (lo.exclusive && lo.value >= 0 && (!hi || lo.value < hi->value))
    alts.push_back("\"" + std::to_string(lo.value) + "\" " + nonzero_frac);
  if (hi && !hi->exclusive && hi->value >= 0 &&
      (lo.exclusive ? hi->value > lo.value : hi->value >= lo.value))
    alts.push_back("\"" + std::to_string(hi->value) + "\" " + zero_frac);
  return Join(alts);
}

}  // namespace

std::string IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  // x >= 0 part, then "-" M for M >= 1.
  const int64_t nlo = std::max<int64_t>(0, lo.value_or(0)), nhi = hi.value_or(kInf);
  if (!hi || *hi >= 0) alts.push_back(NonNegative(nlo, nhi));
  if (!lo || *lo < 0) {
    const int64_t mlo = std::max<int64_t>(1, hi && *hi < 0 ? -*hi : 1), mhi = lo ? -*lo : kInf;
    if (const std::string m = NonNegative(mlo, mhi); !m.empty()) alts.push_back("\"-\" " + m);
  }
  return Join(alts);
}

std::string NumberRange(std::optional<Bound> lo, std::optional<Bound> hi) {
  std::vector<std::string> alts;
  // x >= 0 (no sign).
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive))
    alts.push_back(NonNegativeNumber(lo.value_or(Bound{0, false}), hi));
  // x = -(m): m satisfies -hi <(=) m <(=) -lo, m > 0 wanted (x = -0 is covered above).
  if (!lo || lo->value < 0) {
    Bound mlo = hi ? Bound{-hi->value, hi->exclusive} : Bound{0, true};
    if (mlo.value < 0) mlo = Bound{0, true};
    if (mlo.value == 0) mlo.exclusive = true;  // m > 0
    std::optional<Bound> mhi;
    if (lo) mhi = Bound{-lo->value, lo->exclusive};
    if (const std::string m = NonNegativeNumber(mlo, mhi); !m.empty()) alts.push_back("\"-\" " + m);
  }
  return Join(alts);
}

}  // namespace tern::grammar::internal
