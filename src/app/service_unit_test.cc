// The environment file round trip (what RenderEnvFile writes, ReadServeArgs
// and systemd's splitting read back) and the unit's sizing keys. systemd's own
// parser is checked against the same files in tests/integration/service_unit.sh.
#include "app/service_unit.h"

#include <gtest/gtest.h>

namespace tern::app {
namespace {

ServiceSpec Spec(std::vector<std::string> args) {
  return ServiceSpec{.name = "t", .tern_binary = "/usr/local/bin/tern", .serve_args = std::move(args),
                     .env_file = "/etc/tern/t.env", .model_dir = "/models/q"};
}

TEST(ServiceUnit, EnvFileRoundTripsAwkwardValues) {
  const std::vector<std::string> args = {
      "--model", "/models/q", "--default-chat-template-kwargs", R"({"enable_thinking": false, "x": "it's $HOME `x` \\"})",
      "--served-model-name", "two words", "--api-key", "a\"b\\c'd", "--chat-template", "line 1\nline 2\ttab", "--port=8000"};
  auto back = ReadServeArgs(RenderEnvFile(Spec(args)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, args);
}

TEST(ServiceUnit, SplitsLikeSystemd) {
  // extract_first_word(EXTRACT_UNQUOTE|EXTRACT_RELAX): quotes group and vanish, \ takes the next byte.
  EXPECT_EQ(SplitWordsLikeSystemd("  a \"b c\"d 'e \"f' g\\ h \\\\ \n i"),
            (std::vector<std::string>{"a", "b cd", "e \"f", "g h", "\\", "i"}));
  EXPECT_EQ(SplitWordsLikeSystemd("\"unterminated x"), (std::vector<std::string>{"unterminated x"}));
  EXPECT_TRUE(SplitWordsLikeSystemd(" \n\t ").empty());
}

TEST(ServiceUnit, ReadsHandEditedEnvFiles) {
  auto a = ReadServeArgs("# comment\n; other\nOTHER=1\nTERN_SERVE_ARGS=--port 1 --host  ::   \n");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<std::string>{"--port", "1", "--host", "::"}));
  auto b = ReadServeArgs("TERN_SERVE_ARGS='--served-model-name \"a b\"'\n");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<std::string>{"--served-model-name", "a b"}));
  EXPECT_FALSE(ReadServeArgs("OTHER=1\n").ok());
  auto c = ReadServeArgs("TERN_SERVE_ARGS=\"--port 1\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("line 1: unterminated"), std::string::npos) << c.status().message();
}

TEST(ServiceUnit, SizesStopTimeoutAndLimitsFromTheServeFlags) {
  ServiceSpec s = Spec({"--model", "/models/q"});
  s.max_connections = 1000;
  s.shutdown_grace_s = 45.5;
  const std::string unit = RenderUnit(s);
  EXPECT_NE(unit.find("\nTimeoutStopSec=76\n"), std::string::npos) << unit;  // 46 + 30
  EXPECT_NE(unit.find("\nLimitNOFILE=2256\n"), std::string::npos);           // 2*1000 + 256
  EXPECT_NE(unit.find("\nTasksMax=2024\n"), std::string::npos);
  EXPECT_NE(unit.find("\nReadOnlyPaths=/models/q\n"), std::string::npos);
  EXPECT_NE(unit.find("\nDynamicUser=yes\n"), std::string::npos);
  EXPECT_NE(unit.find("\nProtectHome=yes\n"), std::string::npos);
  EXPECT_NE(unit.find("\nCapabilityBoundingSet=\n"), std::string::npos);
  EXPECT_EQ(unit.find("RestartSteps"), std::string::npos);  // systemd 252 does not know it
  EXPECT_EQ(NoFileLimit(10), 1024);

  s.port = 80;
  s.user = "tern";
  s.model_dir = "/root/models/q";
  s.systemd_version = 254;
  const std::string low = RenderUnit(s);
  EXPECT_NE(low.find("\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n"), std::string::npos);
  EXPECT_NE(low.find("\nUser=tern\n"), std::string::npos);
  EXPECT_EQ(low.find("DynamicUser"), std::string::npos);
  EXPECT_NE(low.find("\nProtectHome=read-only\n"), std::string::npos);
  EXPECT_NE(low.find("\nRestartSteps="), std::string::npos);
}

TEST(ServiceUnit, RejectsNamesAndPathsAUnitCannotHold) {
  EXPECT_TRUE(ValidateServiceName("qwen3-30b_a.b").ok());
  EXPECT_FALSE(ValidateServiceName("").ok());
  EXPECT_FALSE(ValidateServiceName("a b").ok());
  EXPECT_FALSE(ValidateServiceName("-x").ok());
  EXPECT_FALSE(ValidateServiceName("a/b").ok());
  EXPECT_TRUE(CheckUnitSafePath("--model", "/models/Qwen3-30B-A3B").ok());
  EXPECT_FALSE(CheckUnitSafePath("--model", "models/x").ok());
  EXPECT_FALSE(CheckUnitSafePath("--model", "/models/a b").ok());
  EXPECT_FALSE(CheckUnitSafePath("--model", "/models/100%").ok());
}

}  // namespace
}  // namespace tern::app
