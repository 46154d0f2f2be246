#include "grammar/automaton.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace tern::grammar {
namespace {

// One step of a UTF-8 byte sequence: a byte range.
struct ByteRange {
  uint8_t lo, hi;
};
using ByteSeq = std::vector<ByteRange>;

int Utf8Len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void Utf8Bytes(uint32_t cp, uint8_t* out) {
  std::string s;
  AppendUtf8(cp, &s);
  for (size_t i = 0; i < s.size(); ++i) out[i] = uint8_t(s[i]);
}

// Splits code points [lo, hi] into sequences of byte ranges whose product is
// exactly the UTF-8 encodings of the range (the method of RE2 and Rust's
// regex-syntax utf8 module).
void SplitUtf8(uint32_t lo, uint32_t hi, std::vector<ByteSeq>* out) {
  static const uint32_t kMax[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (int n = 0; n < 4; ++n) {  // split where the encoded length changes
    const uint32_t min = n == 0 ? 0 : kMax[n - 1] + 1;
    if (lo < min && hi >= min) {
      SplitUtf8(lo, min - 1, out);
      SplitUtf8(min, hi, out);
      return;
    }
  }
  if (hi < 0x80) {
    out->push_back({{uint8_t(lo), uint8_t(hi)}});
    return;
  }
  const int len = Utf8Len(lo);
  for (int i = 1; i < len; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SplitUtf8(lo, lo | m, out);
        SplitUtf8((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        SplitUtf8(lo, (hi & ~m) - 1, out);
        SplitUtf8(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  Utf8Bytes(lo, a);
  Utf8Bytes(hi, b);
  ByteSeq seq;
  for (int i = 0; i < len; ++i) seq.push_back({a[i], b[i]});
  out->push_back(std::move(seq));
}

struct NfaEdge {
  enum Kind : uint8_t { kEps, kByte, kCall } kind;
  uint8_t lo = 0, hi = 0;
  int32_t rule = -1;
  int32_t target;
};

}  // namespace

class AutomatonBuilder {
 public:
  AutomatonBuilder(const GrammarAst& ast, const GrammarLimits& limits) : ast_(ast), limits_(limits) {}

  Result<Automaton> Run() {
    for (size_t i = 0; i < ast_.rules.size(); ++i) {
      if (rule_ids_.count(ast_.rules[i].name)) return Status::Errorf("rule '{}' is defined twice", ast_.rules[i].name);
      rule_ids_[ast_.rules[i].name] = int32_t(i);
    }
    const auto root = rule_ids_.find(ast_.root);
    if (root == rule_ids_.end()) return Status::Errorf("the grammar has no rule '{}'", ast_.root);
    // 1. One NFA per rule.
    for (const Rule& r : ast_.rules) {
      const int32_t start = NewState(), accept = NewState();
      TERN_RETURN_IF_ERROR(Build(r.body, start, accept).WithContext(fmt::format("rule '{}'", r.name)));
      nfa_start_.push_back(start);
      nfa_accept_.push_back(accept);
    }
    // 2. Byte classes: bytes no edge tells apart share a column.
    std::vector<uint8_t> boundary(257, 0);
    boundary[0] = 1;
    for (const auto& edges : nfa_)
      for (const NfaEdge& e : edges)
        if (e.kind == NfaEdge::kByte) boundary[e.lo] = boundary[size_t(e.hi) + 1] = 1;
    int cls = -1;
    for (int b = 0; b < 256; ++b) {
      if (boundary[size_t(b)]) ++cls;
      a_.byte_class_[b] = uint8_t(cls);
    }
    a_.num_classes_ = cls + 1;
    // 3. Subset construction per rule.
    a_.rule_start_.resize(ast_.rules.size());
    a_.root_ = root->second;
    for (size_t r = 0; r < ast_.rules.size(); ++r) {
      a_.rule_name_.push_back(ast_.rules[r].name);
      TERN_RETURN_IF_ERROR(Determinize(int32_t(r)));
    }
    a_.has_bytes_.assign(a_.final_.size(), 0);
    TERN_RETURN_IF_ERROR(CheckLeftRecursion());
    TERN_RETURN_IF_ERROR(Prune());
    return std::move(a_);
  }

 private:
  int32_t NewState() {
    nfa_.emplace_back();
    return int32_t(nfa_.size() - 1);
  }
  void Eps(int32_t from, int32_t to) { nfa_[size_t(from)].push_back({.kind = NfaEdge::kEps, .target = to}); }

  Status Build(const Expr& e, int32_t from, int32_t to) {
    if (int64_t(nfa_.size()) > limits_.max_nfa_states)
      return Status::Errorf("the grammar is too large (over {} automaton states)", limits_.max_nfa_states);
    switch (e.kind) {
      case Expr::Kind::kEmpty: Eps(from, to); return Status::Ok();
      case Expr::Kind::kLiteral: {
        int32_t cur = from;
        for (size_t i = 0; i < e.bytes.size(); ++i) {
          const int32_t nxt = i + 1 == e.bytes.size() ? to : NewState();
          const uint8_t b = uint8_t(e.bytes[i]);
          nfa_[size_t(cur)].push_back({.kind = NfaEdge::kByte, .lo = b, .hi = b, .target = nxt});
          cur = nxt;
        }
        if (e.bytes.empty()) Eps(from, to);
        return Status::Ok();
      }
      case Expr::Kind::kClass: {
        std::vector<CodeRange> r = e.negated ? ComplementRanges(e.ranges)
                                             : IntersectRanges(e.ranges, ComplementRanges({}));
        std::vector<ByteSeq> seqs;
        for (const auto& [lo, hi] : r) SplitUtf8(lo, hi, &seqs);
        for (const ByteSeq& s : seqs) {
          int32_t cur = from;
          for (size_t i = 0; i < s.size(); ++i) {
            const int32_t nxt = i + 1 == s.size() ? to : NewState();
            nfa_[size_t(cur)].push_back({.kind = NfaEdge::kByte, .lo = s[i].lo, .hi = s[i].hi, .target = nxt});
            cur = nxt;
          }
        }
        return Status::Ok();  // an empty class matches nothing: no edge
      }
      case Expr::Kind::kRef: {
        const auto it = rule_ids_.find(e.name);
        if (it == rule_ids_.end()) return Status::Errorf("undefined rule '{}'", e.name);
        nfa_[size_t(from)].push_back({.kind = NfaEdge::kCall, .rule = it->second, .target = to});
        return Status::Ok();
      }
      case Expr::Kind::kSeq: {
        int32_t cur = from;
        for (size_t i = 0; i < e.children.size(); ++i) {
          const int32_t nxt = i + 1 == e.children.size() ? to : NewState();
          TERN_RETURN_IF_ERROR(Build(e.children[i], cur, nxt));
          cur = nxt;
        }
        if (e.children.empty()) Eps(from, to);
        return Status::Ok();
      }
      case Expr::Kind::kAlt:
        for (const Expr& c : e.children) TERN_RETURN_IF_ERROR(Build(c, from, to));
        return Status::Ok();
      case Expr::Kind::kRepeat: {
        const Expr& c = e.children[0];
        if (e.min * 4 > limits_.max_nfa_states || e.max * 4 > limits_.max_nfa_states)
          return Status::Errorf("a repetition count of {} is too large", std::max(e.min, e.max));
        int32_t cur = from;
        for (int64_t i = 0; i < e.min; ++i) {
          const int32_t nxt = NewState();
          TERN_RETURN_IF_ERROR(Build(c, cur, nxt));
          cur = nxt;
        }
        if (e.max < 0) {
          const int32_t loop = NewState();
          Eps(cur, loop);
          TERN_RETURN_IF_ERROR(Build(c, loop, loop));
          Eps(loop, to);
          return Status::Ok();
        }
        for (int64_t i = e.min; i < e.max; ++i) {
          const int32_t nxt = NewState();
          Eps(cur, to);
          TERN_RETURN_IF_ERROR(Build(c, cur, nxt));
          cur = nxt;
        }
        Eps(cur, to);
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  void EpsClosure(std::vector<int32_t>* set) {
    ++epoch_;
    if (mark_.size() < nfa_.size()) mark_.resize(nfa_.size(), 0);
    for (int32_t s : *set) mark_[size_t(s)] = epoch_;
    for (size_t i = 0; i < set->size(); ++i) {
      work_ += int64_t(nfa_[size_t((*set)[i])].size()) + 1;
      for (const NfaEdge& e : nfa_[size_t((*set)[i])])
        if (e.kind == NfaEdge::kEps && mark_[size_t(e.target)] != epoch_) {
          mark_[size_t(e.target)] = epoch_;
          set->push_back(e.target);
        }
    }
    std::sort(set->begin(), set->end());
  }

  Status CheckWork() const {
    if (work_ > limits_.max_subset_work)
      return Status::Errorf("the grammar is too complex (its automaton needs over {} construction steps)",
                            limits_.max_subset_work);
    return Status::Ok();
  }

  Status Determinize(int32_t rule) {
    // Each state's set of NFA states is held once, as the key of `ids` (a map's
    // keys stay put); `todo` points at the keys of the states still to expand.
    std::map<std::vector<int32_t>, int32_t> ids;
    std::vector<std::pair<const std::vector<int32_t>*, int32_t>> todo;
    const int32_t accept = nfa_accept_[size_t(rule)];
    const int C = a_.num_classes_;
    auto intern = [&](std::vector<int32_t> set) -> Result<int32_t> {
      EpsClosure(&set);
      TERN_RETURN_IF_ERROR(CheckWork());
      auto [it, fresh] = ids.emplace(std::move(set), int32_t(a_.final_.size()));
      if (fresh) {
        if (int64_t(a_.final_.size()) >= limits_.max_dfa_states)
          return Status::Errorf("the grammar is too complex (over {} automaton states)", limits_.max_dfa_states);
        a_.final_.push_back(std::binary_search(it->first.begin(), it->first.end(), accept));
        a_.rule_of_.push_back(rule);
        a_.next_.resize(a_.next_.size() + size_t(C), -1);
        pending_calls_.emplace_back();
        todo.emplace_back(&it->first, it->second);
      }
      return it->second;
    };
    TERN_ASSIGN_OR_RETURN(a_.rule_start_[size_t(rule)], intern({nfa_start_[size_t(rule)]}));
    std::vector<std::vector<int32_t>> buckets(static_cast<size_t>(C));
    while (!todo.empty()) {
      const auto [set_ptr, id] = todo.back();
      todo.pop_back();
      const std::vector<int32_t>& set = *set_ptr;
      for (auto& b : buckets) b.clear();
      std::map<int32_t, std::vector<int32_t>> calls;
      work_ += int64_t(set.size());
      TERN_RETURN_IF_ERROR(CheckWork());
      for (int32_t s : set)
        for (const NfaEdge& e : nfa_[size_t(s)]) {
          if (e.kind == NfaEdge::kByte) {
            work_ += a_.byte_class_[e.hi] - a_.byte_class_[e.lo] + 1;
            for (int c = a_.byte_class_[e.lo]; c <= a_.byte_class_[e.hi]; ++c) buckets[size_t(c)].push_back(e.target);
          } else if (e.kind == NfaEdge::kCall) {
            calls[e.rule].push_back(e.target);
          }
        }
      for (int c = 0; c < C; ++c) {
        if (buckets[size_t(c)].empty()) continue;
        TERN_ASSIGN_OR_RETURN(const int32_t t, intern(buckets[size_t(c)]));
        a_.next_[size_t(id) * size_t(C) + size_t(c)] = t;
      }
      for (auto& [callee, targets] : calls) {
        TERN_ASSIGN_OR_RETURN(const int32_t ret, intern(targets));
        pending_calls_[size_t(id)].push_back({callee, ret});
      }
    }
    return Status::Ok();
  }

  // States of `rule` reachable from its start without consuming a byte
  // (through calls of rules that can match "").
  std::vector<int32_t> NullReachable(int32_t rule) const {
    std::vector<int32_t> out = {a_.rule_start_[size_t(rule)]};
    for (size_t i = 0; i < out.size(); ++i)
      for (const RuleCall& c : pending_calls_[size_t(out[i])])
        if (nullable_[size_t(c.rule)] && std::find(out.begin(), out.end(), c.return_state) == out.end())
          out.push_back(c.return_state);
    return out;
  }

  Status CheckLeftRecursion() {
    const size_t R = ast_.rules.size();
    nullable_.assign(R, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < R; ++r) {
        if (nullable_[r]) continue;
        for (int32_t s : NullReachable(int32_t(r)))
          if (a_.final_[size_t(s)]) {
            nullable_[r] = 1;
            changed = true;
            break;
          }
      }
    }
    // Rule r -> rules it may call before consuming anything; a cycle is left recursion.
    std::vector<std::vector<int32_t>> first_calls(R);
    for (size_t r = 0; r < R; ++r)
      for (int32_t s : NullReachable(int32_t(r)))
        for (const RuleCall& c : pending_calls_[size_t(s)]) first_calls[r].push_back(c.rule);
    std::vector<int> color(R, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<int32_t, size_t>> stack;
    for (size_t start = 0; start < R; ++start) {
      if (color[start]) continue;
      stack.push_back({int32_t(start), 0});
      color[start] = 1;
      while (!stack.empty()) {
        auto& [r, i] = stack.back();
        if (i < first_calls[size_t(r)].size()) {
          const int32_t c = first_calls[size_t(r)][i++];
          if (color[size_t(c)] == 1)
            return Status::Errorf("rule '{}' is left-recursive (it can reach itself without consuming input)",
                                  ast_.rules[size_t(c)].name);
          if (color[size_t(c)] == 0) {
            color[size_t(c)] = 1;
            stack.push_back({c, 0});
          }
        } else {
          color[size_t(r)] = 2;
          stack.pop_back();
        }
      }
    }
    return Status::Ok();
  }

  // Keeps only states from which the end of their rule can be reached.
  Status Prune() {
    const size_t S = a_.final_.size();
    const size_t C = size_t(a_.num_classes_);
    std::vector<std::vector<int32_t>> rev(S);  // t -> states whose productivity may follow from t
    for (size_t s = 0; s < S; ++s) {
      for (size_t c = 0; c < C; ++c)
        if (const int32_t t = a_.next_[s * C + c]; t >= 0) rev[size_t(t)].push_back(int32_t(s));
      for (const RuleCall& call : pending_calls_[s]) {
        rev[size_t(a_.rule_start_[size_t(call.rule)])].push_back(int32_t(s));
        rev[size_t(call.return_state)].push_back(int32_t(s));
      }
    }
    std::vector<uint8_t> prod(S, 0);
    std::vector<int32_t> work;
    for (size_t s = 0; s < S; ++s)
      if (a_.final_[s]) prod[s] = 1, work.push_back(int32_t(s));
    auto productive = [&](size_t s) {
      for (size_t c = 0; c < C; ++c)
        if (const int32_t t = a_.next_[s * C + c]; t >= 0 && prod[size_t(t)]) return true;
      for (const RuleCall& call : pending_calls_[s])
        if (prod[size_t(a_.rule_start_[size_t(call.rule)])] && prod[size_t(call.return_state)]) return true;
      return false;
    };
    while (!work.empty()) {
      const int32_t t = work.back();
      work.pop_back();
      for (int32_t s : rev[size_t(t)])
        if (!prod[size_t(s)] && productive(size_t(s))) prod[size_t(s)] = 1, work.push_back(s);
    }
    if (!prod[size_t(a_.rule_start_[size_t(a_.root_)])])
      return Status::Error("the grammar matches no string");
    a_.call_begin_.assign(S + 1, 0);
    a_.follow_.assign(ast_.rules.size(), {});
    for (size_t s = 0; s < S; ++s) {
      for (size_t c = 0; c < C; ++c) {
        int32_t& t = a_.next_[s * C + c];
        if (t >= 0 && !prod[size_t(t)]) t = -1;
        if (t >= 0) a_.has_bytes_[s] = 1;
      }
      a_.call_begin_[s] = uint32_t(a_.calls_.size());
      if (!prod[s]) continue;
      for (const RuleCall& call : pending_calls_[s])
        if (prod[size_t(a_.rule_start_[size_t(call.rule)])] && prod[size_t(call.return_state)]) {
          a_.calls_.push_back(call);
          auto& f = a_.follow_[size_t(call.rule)];
          if (std::find(f.begin(), f.end(), call.return_state) == f.end()) f.push_back(call.return_state);
        }
    }
    a_.call_begin_[S] = uint32_t(a_.calls_.size());
    return Status::Ok();
  }

  const GrammarAst& ast_;
  GrammarLimits limits_;
  std::unordered_map<std::string, int32_t> rule_ids_;
  std::vector<std::vector<NfaEdge>> nfa_;
  std::vector<int32_t> nfa_start_, nfa_accept_;
  std::vector<uint32_t> mark_;
  int64_t work_ = 0;  // subset construction steps so far (GrammarLimits::max_subset_work)
  uint32_t epoch_ = 0;
  std::vector<std::vector<RuleCall>> pending_calls_;
  std::vector<uint8_t> nullable_;
  Automaton a_;
};

Result<Automaton> Automaton::Build(const GrammarAst& ast, const GrammarLimits& limits) {
  std::unordered_set<std::string_view> names;  // before inlining, so a duplicate is reported, not merged
  for (const Rule& r : ast.rules)                // (a set: the pairwise scan was 60,000^2 / 2 comparisons)
    if (!names.insert(r.name).second) return Status::Errorf("rule '{}' is defined twice", r.name);
  const GrammarAst inlined = InlineRules(ast);
  return AutomatonBuilder(inlined, limits).Run();
}

size_t Automaton::memory_bytes() const {
  size_t n = next_.capacity() * sizeof(int32_t) + final_.capacity() + has_bytes_.capacity() +
             call_begin_.capacity() * sizeof(uint32_t) + calls_.capacity() * sizeof(RuleCall) +
             (rule_of_.capacity() + rule_start_.capacity()) * sizeof(int32_t);
  for (const std::string& name : rule_name_) n += sizeof(std::string) + name.capacity();
  for (const auto& f : follow_) n += sizeof(f) + f.capacity() * sizeof(int32_t);
  return n;
}

}  // namespace tern::grammar
