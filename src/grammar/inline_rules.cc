// InlineRules: copies every small non-recursive rule into the rules that use
// it and drops rules the root cannot reach. A rule that ends inside a token
// (one JSON string character, a separator) makes that token depend on the
// caller's stack, so each call of it would turn most of the vocabulary into
// "uncertain" tokens checked per step; inlined, the caller's own automaton
// decides them once at compile time. Recursive rules stay calls.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "grammar/automaton.h"

namespace tern::grammar {
namespace {

constexpr int64_t kInlineMaxCost = 4000;  // automaton states an inlined body may add, roughly
constexpr int64_t kRuleMaxCost = 200000;  // stop inlining into a rule once it is this large
constexpr int64_t kTotalInlineCost = 4000000;  // and into any rule once this much was copied in all

int64_t Cost(const Expr& e) {
  int64_t c = 1;
  if (e.kind == Expr::Kind::kLiteral) c += int64_t(e.bytes.size());
  for (const Expr& ch : e.children) c += Cost(ch);
  if (e.kind == Expr::Kind::kRepeat) c *= std::max<int64_t>({1, e.min, e.max});
  return std::min<int64_t>(c, int64_t(1) << 40);
}

void Refs(const Expr& e, std::vector<std::string>* out) {
  if (e.kind == Expr::Kind::kRef) out->push_back(e.name);
  for (const Expr& c : e.children) Refs(c, out);
}

}  // namespace

GrammarAst InlineRules(const GrammarAst& in) {
  const size_t R = in.rules.size();
  std::unordered_map<std::string, size_t> id;
  for (size_t i = 0; i < R; ++i) id.emplace(in.rules[i].name, i);
  const auto root_it = id.find(in.root);
  if (root_it == id.end()) return in;  // Build reports it
  std::vector<std::vector<size_t>> calls(R);
  for (size_t i = 0; i < R; ++i) {
    std::vector<std::string> names;
    Refs(in.rules[i].body, &names);
    for (const auto& n : names)
      if (auto it = id.find(n); it != id.end()) calls[i].push_back(it->second);  // undefined: Build reports it
  }
  // Tarjan's strongly connected components; they come out callees first.
  // Iterative: a chain of 60,000 rules each calling the next was as many
  // nested calls on an HTTP thread's stack.
  std::vector<int> index(R, -1), low(R, 0), comp(R, -1);
  std::vector<bool> on(R, false);
  std::vector<size_t> stack, order;
  std::vector<size_t> comp_size;
  int counter = 0;
  struct Frame {
    size_t v, next;  // the rule, and its next call to look at
  };
  std::vector<Frame> frames;
  auto enter = [&](size_t v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on[v] = true;
    frames.push_back({v, 0});
  };
  enter(root_it->second);  // only what the root reaches
  while (!frames.empty()) {
    Frame& f = frames.back();
    const size_t v = f.v;
    if (f.next < calls[v].size()) {
      const size_t w = calls[v][f.next++];
      if (index[w] < 0) enter(w);  // (f may dangle from here on)
      else if (on[w]) low[v] = std::min(low[v], index[w]);
      continue;
    }
    if (low[v] == index[v]) {
      const int c = int(comp_size.size());
      comp_size.push_back(0);
      for (;;) {
        const size_t w = stack.back();
        stack.pop_back();
        on[w] = false;
        comp[w] = c;
        comp_size.back()++;
        order.push_back(w);
        if (w == v) break;
      }
    }
    frames.pop_back();
    if (!frames.empty()) low[frames.back().v] = std::min(low[frames.back().v], low[v]);
  }
  std::vector<bool> recursive(R, false);
  for (size_t v : order) {
    recursive[v] = comp_size[size_t(comp[v])] > 1;
    for (size_t w : calls[v]) recursive[v] = recursive[v] || w == v;
  }
  std::vector<Expr> body(R);
  std::vector<int64_t> cost(R, 0);
  std::vector<bool> inlinable(R, false);
  // What inlining copies in all, bounded too: each of 60,000 chained rules
  // took in its callee's whole body (up to kInlineMaxCost), gigabytes of copies.
  int64_t total_budget = kTotalInlineCost;
  std::function<void(Expr&, int64_t&)> substitute = [&](Expr& e, int64_t& budget) {
    if (e.kind == Expr::Kind::kRef) {
      const auto it = id.find(e.name);
      if (it == id.end()) return;
      const size_t w = it->second;
      if (inlinable[w] && budget >= cost[w] && total_budget >= cost[w]) {
        budget -= cost[w];
        total_budget -= cost[w];
        e = body[w];
      }
      return;
    }
    for (Expr& c : e.children) substitute(c, budget);
  };
  for (size_t v : order) {  // callees before callers
    body[v] = in.rules[v].body;
    int64_t budget = kRuleMaxCost;
    substitute(body[v], budget);
    cost[v] = Cost(body[v]);
    inlinable[v] = !recursive[v] && v != root_it->second && cost[v] <= kInlineMaxCost;
  }
  // Keep the rules still referenced from the root, in their original order.
  std::vector<bool> keep(R, false);
  std::vector<size_t> work = {root_it->second};
  keep[root_it->second] = true;
  while (!work.empty()) {
    const size_t v = work.back();
    work.pop_back();
    std::vector<std::string> names;
    Refs(body[v], &names);
    for (const auto& n : names)
      if (auto it = id.find(n); it != id.end() && !keep[it->second]) keep[it->second] = true, work.push_back(it->second);
  }
  GrammarAst out;
  out.root = in.root;
  for (size_t i = 0; i < R; ++i)
    if (keep[i]) out.rules.push_back({in.rules[i].name, std::move(body[i])});
  return out;
}

}  // namespace tern::grammar
