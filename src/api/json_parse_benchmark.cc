// Parsing request bodies of many keys: must stay linear in the body's size
// (nlohmann::ordered_json::parse scans each object for every key it adds).
#include <string>

#include <benchmark/benchmark.h>

#include "api/json_parse.h"
#include "api/requests.h"

namespace tern::api {
namespace {

// {"k0000000": 0, ...}: `keys` keys, padded so the body is about `bytes` long.
std::string ManyKeys(size_t keys, size_t bytes) {
  const size_t per_key = bytes / keys;
  std::string body = "{";
  for (size_t i = 0; i < keys; ++i) {
    std::string member = (i ? ",\"" : "\"") + std::to_string(i) + "\":";
    member += std::string(per_key > member.size() + 2 ? per_key - member.size() - 2 : 0, '1') + "0";
    body += member;
  }
  return body + "}";
}

void BM_ParseJsonBodyManyKeys(benchmark::State& state) {
  const std::string body = ManyKeys(size_t(state.range(0)), size_t(state.range(1)));
  for (auto _ : state) {
    auto j = ParseJsonBody(body);
    benchmark::DoNotOptimize(j);
  }
  state.SetBytesProcessed(int64_t(state.iterations() * body.size()));
  state.counters["keys"] = double(state.range(0));
}
// 1M keys in a 32 MB body (the request limit).
BENCHMARK(BM_ParseJsonBodyManyKeys)->Args({1 << 20, 32 << 20})->Args({100000, 32 << 20})->Unit(benchmark::kMillisecond);

// logit_bias of 200k entries through the chat parser.
void BM_ChatRequestLogitBias(benchmark::State& state) {
  std::string body = R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {)";
  for (int64_t i = 0; i < state.range(0); ++i) body += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  body += "}}";
  for (auto _ : state) {
    auto j = ParseJsonBody(body);
    auto r = ParseChatRequest(*j);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ChatRequestLogitBias)->Arg(200000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tern::api

BENCHMARK_MAIN();
