// Test helpers: read a file of testdata/replies.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/mapped_file.h"

namespace tern::check::testing {

inline std::string ReplyFile(const std::string& name) {
  const char* root = std::getenv("TERN_SOURCE_DIR");
  std::string path = std::string(root ? root : ".") + "/src/check/testdata/replies/" + name;
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : std::string();
}

}  // namespace tern::check::testing
