// Parser detection on the real chat templates of tests/golden/template
// (Hugging Face's files, SOURCES.md): Qwen3 and Qwen3.5 get qwen3 reasoning
// with their own tool-call formats; Llama and DeepSeek V3 templates get none.
#include "api/parser_detect.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tern::api {
namespace {

std::string Template(const std::string& name) {
  const char* root = std::getenv("TERN_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/tests/golden/template/templates/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DetectParsers, FromTheRealTemplates) {
  DetectedParsers q3 = DetectParsers(Template("qwen3.jinja"));
  EXPECT_EQ(q3.reasoning, "qwen3");
  EXPECT_EQ(q3.tool_call, "qwen25");
  DetectedParsers q35 = DetectParsers(Template("qwen3_5.jinja"));
  EXPECT_EQ(q35.reasoning, "qwen3");
  EXPECT_EQ(q35.tool_call, "qwen3_coder");
  for (const char* name : {"llama3_1.jinja", "deepseek_v3.jinja", "gemma3.jinja", "mistral_nemo.jinja"}) {
    DetectedParsers d = DetectParsers(Template(name));
    EXPECT_EQ(d.reasoning, "") << name;
    EXPECT_EQ(d.tool_call, "") << name;
  }
}

}  // namespace
}  // namespace tern::api
