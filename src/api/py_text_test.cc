// Python text forms against CPython's own answers (testdata/py_golden.json,
// written by testdata/make_py_golden.py with /usr/bin/python3).
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "api/json_parse.h"
#include "api/json_stream.h"
#include "api/py_literal.h"
#include "api/py_text.h"
#include "api/tool_parser.h"

namespace tern::api {
namespace {

const Json& Golden() {
  static const Json golden = [] {
    const char* root = std::getenv("TERN_SOURCE_DIR");
    std::ifstream in(std::string(root ? root : ".") + "/src/api/testdata/py_golden.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return Json::parse(ss.str(), nullptr, false);
  }();
  return golden;
}

TEST(PyText, GoldenLoaded) {
  ASSERT_TRUE(Golden().is_object()) << "set TERN_SOURCE_DIR to the repository root";
  EXPECT_GT(Golden()["float_repr"].size(), 200u);
}

TEST(PyText, FloatReprMatchesPython) {
  for (const auto& c : Golden()["float_repr"]) {
    const double x = std::strtod(c["hex"].get<std::string>().c_str(), nullptr);
    EXPECT_EQ(PyFloatRepr(x), c["repr"].get<std::string>()) << c["hex"];
  }
  EXPECT_EQ(PyFloatRepr(INFINITY), "inf");
  EXPECT_EQ(PyFloatRepr(-INFINITY), "-inf");
  EXPECT_EQ(PyFloatRepr(NAN), "nan");
}

TEST(PyText, JsonDumpsMatchesPython) {
  for (const auto& c : Golden()["json_dumps"]) {
    const std::string text = c["text"];
    const Json parsed = Json::parse(text, nullptr, false);
    if (text.find("1e400") != std::string::npos) {  // beyond double: nlohmann rejects it
      EXPECT_TRUE(parsed.is_discarded());
      continue;
    }
    ASSERT_FALSE(parsed.is_discarded()) << text;
    EXPECT_EQ(PyJsonDumps(parsed), c["dumps"].get<std::string>()) << text;
  }
}

// The streaming writer gives the same text byte by byte (duplicate keys are
// the one thing it cannot fold).
TEST(PyText, JsonStreamWriterMatchesPython) {
  for (const auto& c : Golden()["json_dumps"]) {
    const std::string text = c["text"];
    if (text.find("dup") != std::string::npos) continue;
    JsonStreamWriter w;
    for (const char ch : text) {
      if (w.done()) break;
      ASSERT_TRUE(w.Push(ch) || w.done()) << text;
    }
    w.Finish();
    EXPECT_TRUE(w.done()) << text;
    EXPECT_EQ(w.out(), c["dumps"].get<std::string>()) << text;
  }
}

TEST(PyText, JsonStreamWriterRejectsNonJson) {
  for (const std::string bad : {"{\"a\" 1}", "[1,]", "{,}", "tru", "01", "1.", "-", "\"\\x\"",
                                "{\"a\":1]", "[1}", "{1:2}", "\"\\u12G4\""}) {
    JsonStreamWriter w;
    bool ok = true;
    for (const char ch : bad) ok = ok && (w.Push(ch) || w.done());
    if (ok) ok = w.Finish();
    EXPECT_FALSE(ok && w.done() && !w.failed()) << bad;
  }
}

TEST(PyText, JsonStreamWriterLoneSurrogatesBecomeReplacementChars) {
  JsonStreamWriter w;
  for (const char ch : std::string(R"(["\ud83d", "\ude00x", "\ud83d\n"])")) ASSERT_TRUE(w.Push(ch));
  EXPECT_TRUE(w.done());
  EXPECT_EQ(w.out(), "[\"\xEF\xBF\xBD\", \"\xEF\xBF\xBDx\", \"\xEF\xBF\xBD\\n\"]");
  EXPECT_FALSE(Json::parse(w.out(), nullptr, false).is_discarded());
}

TEST(PyText, JsonStreamWriterEventsLocateMembers) {
  const std::string text = R"({"name": "f", "arguments": {"x": [1, 2]}})";
  JsonStreamWriter w;
  size_t args_begin = 0, args_end = 0;
  std::string key;
  for (const char ch : text) {
    ASSERT_TRUE(w.Push(ch));
    for (const auto& e : w.events()) {
      if (e.depth != 1) continue;
      if (e.kind == JsonStreamWriter::EventKind::kKey) key = w.key();
      if (key == "arguments" && e.kind == JsonStreamWriter::EventKind::kValueBegin) args_begin = e.offset;
      if (key == "arguments" && e.kind == JsonStreamWriter::EventKind::kValueEnd) args_end = e.offset;
    }
  }
  EXPECT_TRUE(w.done());
  EXPECT_EQ(w.out().substr(args_begin, args_end - args_begin), R"({"x": [1, 2]})");
}

TEST(PyText, StrReprMatchesPython) {
  for (const auto& c : Golden()["str_repr"])
    EXPECT_EQ(PyStrRepr(c["s"].get<std::string>()), c["repr"].get<std::string>());
}

TEST(PyText, LiteralEvalMatchesPython) {
  for (const auto& c : Golden()["literal_eval"]) {
    const std::string text = c["text"];
    const auto v = PyLiteralEval(text);
    if (c["dumps"].is_null()) {
      EXPECT_FALSE(v.has_value()) << text << " -> " << (v ? PyJsonDumps(*v) : "");
    } else {
      ASSERT_TRUE(v.has_value()) << text;
      EXPECT_EQ(PyJsonDumps(*v), c["dumps"].get<std::string>()) << text;
    }
  }
}

TEST(PyText, IntAndFloatTextMatchPython) {
  for (const auto& c : Golden()["int_text"]) {
    const auto v = PyIntText(c["s"].get<std::string>());
    if (c["int"].is_null()) EXPECT_FALSE(v) << c["s"];
    else EXPECT_EQ(v.value_or("<none>"), c["int"].get<std::string>()) << c["s"];
  }
  for (const auto& c : Golden()["float_text"]) {
    const auto v = PyFloatText(c["s"].get<std::string>());
    if (c["float"].is_null()) {
      EXPECT_FALSE(v) << c["s"];
      continue;
    }
    ASSERT_TRUE(v) << c["s"];
    const std::string want = c["float"];
    if (want == "nan") EXPECT_TRUE(std::isnan(*v));
    else if (want == "inf" || want == "-inf") EXPECT_EQ(*v, want == "inf" ? INFINITY : -INFINITY);
    else EXPECT_EQ(*v, std::strtod(want.c_str(), nullptr)) << c["s"];
  }
}

TEST(PyText, XmlParameterConversionMatchesPythonReference) {
  const Json& config = Golden()["xml_convert_config"];
  for (const auto& c : Golden()["xml_convert"]) {
    const std::string value = c["value"], name = c["name"];
    EXPECT_EQ(ConvertXmlParameter(value, name, config), c["dumps"].get<std::string>())
        << name << " = " << value;
  }
  EXPECT_TRUE(IsStringXmlParameter("location", config));
  EXPECT_TRUE(IsStringXmlParameter("untyped", config));
  EXPECT_TRUE(IsStringXmlParameter("not_in_schema", config));
  EXPECT_FALSE(IsStringXmlParameter("days", config));
  EXPECT_FALSE(IsStringXmlParameter("anything", config));
}

TEST(PyText, JsonNestingDepthIgnoresStrings) {
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": "[[[{{{"}]})"), 3);
  EXPECT_EQ(JsonNestingDepth(R"("\"[")"), 0);
  EXPECT_EQ(JsonNestingDepth(std::string(2000, '[')), 2000);
}

}  // namespace
}  // namespace tern::api
