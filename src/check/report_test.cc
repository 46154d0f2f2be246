// Reporters (table, JSON, JUnit XML) and suite selection.
#include "check/report.h"

#include <gtest/gtest.h>

#include "check/runner.h"

namespace tern::check {
namespace {

RunReport Sample() {
  RunReport r;
  r.url = "http://127.0.0.1:30000";
  r.suite = "smoke";
  r.started_at = "2026-01-01T00:00:00Z";
  r.duration_s = 1.5;
  r.server.dialect = "sglang";
  r.server.model = "Qwen/Qwen3-8B";
  r.server.context_length = 32768;
  CheckResult a;
  a.name = "simple_completion";
  a.kind = "semantic";
  a.outcome = Outcome::kFail;
  a.latency_s = 0.085;
  a.tokens = 2;
  a.detail = "expected 'OK', got '<b>&\"x\"</b>' \x01 \xFF";
  CheckResult b;
  b.name = "determinism";
  b.kind = "structural";
  b.outcome = Outcome::kPass;
  b.latency_s = 1.234;
  b.detail = "identical";
  CheckResult c;
  c.name = "long_context";
  c.kind = "semantic";
  c.outcome = Outcome::kSkip;
  c.detail = "context too small";
  r.results = {a, b, c};
  r.exit_code = kExitFailed;
  return r;
}

TEST(Table, RowsAndColour) {
  RunReport r = Sample();
  std::string row = TableRow(r.results[0], false);
  EXPECT_EQ(row.substr(0, 40), "simple_completion        FAIL       85 m");
  EXPECT_EQ(row.find('\x1b'), std::string::npos);
  EXPECT_NE(TableRow(r.results[0], true).find("\x1b[31mFAIL  \x1b[0m"), std::string::npos);
  EXPECT_NE(TableRow(r.results[1], false).find("1.23 s"), std::string::npos);
  std::string sum = TableSummary(r, false);
  EXPECT_NE(sum.find("3 checks: 1 passed, 1 failed, 1 skipped in 1.5 s"), std::string::npos) << sum;
  EXPECT_EQ(sum.find("the model answers wrongly"), std::string::npos) << sum;  // one semantic failure: no verdict
  RunReport wrong = Sample();
  wrong.results[2].outcome = Outcome::kFail;  // two of two semantic checks fail, the structural one passes
  EXPECT_NE(TableSummary(wrong, false).find("the model answers wrongly"), std::string::npos);
  r.fatal = "server at X is not ready";
  EXPECT_EQ(TableSummary(r, false), "tern check: server at X is not ready\n");
  EXPECT_EQ(FormatLatency(0), "-");
}

TEST(Json, SchemaAndInvalidUtf8) {
  auto text = ReportToJsonText(Sample());  // the \xFF in a detail must not throw
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["summary"]["failed"], 1);
  EXPECT_EQ(j["summary"]["total"], 3);
  EXPECT_EQ(j["server"]["context_length"], 32768);
  EXPECT_EQ(j["checks"][0]["result"], "fail");
  EXPECT_DOUBLE_EQ(j["checks"][0]["latency_ms"].get<double>(), 85.0);
  EXPECT_TRUE(j["checks"][2]["latency_ms"].is_null());
  EXPECT_TRUE(j["checks"][2]["tokens"].is_null());
  EXPECT_FALSE(j.contains("fatal"));
}

TEST(Junit, EscapingAndStructure) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(XmlEscape("x\x01y"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(XmlEscape("\xFF"), "\xEF\xBF\xBD");
  EXPECT_EQ(XmlEscape("\xEF\xBF\xBF"), "\xEF\xBF\xBD");
  EXPECT_EQ(XmlEscape("l1\nl2"), "l1&#10;l2");
  std::string x = ReportToJunit(Sample());
  EXPECT_NE(x.find("<testsuites name=\"tern check\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<testcase classname=\"tern.check.semantic\" name=\"simple_completion\" time="), std::string::npos);
  EXPECT_NE(x.find("<failure message=\"expected &apos;OK&apos;, got &apos;&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;&apos;"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<skipped message=\"context too small\"/>"), std::string::npos);
  EXPECT_EQ(x.find('\x01'), std::string::npos);
  RunReport f;
  f.fatal = "server at http://127.0.0.1:1 is not ready: connection failed";
  std::string fx = ReportToJunit(f);
  EXPECT_NE(fx.find("name=\"server_ready\""), std::string::npos);
  EXPECT_NE(fx.find("<error message=\"server at http://127.0.0.1:1 is not ready"), std::string::npos) << fx;
  EXPECT_NE(fx.find("errors=\"1\""), std::string::npos);
}

TEST(SelectChecks, Suites) {
  auto smoke = SelectChecks("smoke");
  ASSERT_TRUE(smoke.ok());
  ASSERT_EQ(smoke->size(), 4u);
  EXPECT_STREQ((*smoke)[0]->name, "model_info");
  EXPECT_STREQ((*smoke)[3]->name, "arithmetic_thinking");
  auto full = SelectChecks("full");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->size(), AllChecks().size() - 1);  // all but numerics, which needs a reference
  EXPECT_STREQ(full->back()->name, "degenerate_output");
  auto numerics = SelectChecks("numerics");
  ASSERT_TRUE(numerics.ok());
  ASSERT_EQ(numerics->size(), 1u);
  EXPECT_STREQ((*numerics)[0]->name, "numerics");
  auto some = SelectChecks(" latency ,model_info");
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 2u);
  EXPECT_STREQ((*some)[0]->name, "model_info");  // battery order, not the order given
  auto mixed = SelectChecks("latency,smoke");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->size(), 5u);
  auto bad = SelectChecks("smoke,bogus,nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown checks 'bogus,nope'"), std::string::npos) << bad.status().message();
  EXPECT_NE(SelectChecks(" , ").status().message().find("no checks"), std::string::npos);
}

}  // namespace
}  // namespace tern::check
