// A grammar compiled to a byte-level pushdown automaton: every rule becomes a
// DFA over bytes (code point classes expanded to UTF-8 byte sequences) whose
// states may also call other rules. A parse position is a stack of such
// states (stack.h); the matcher follows every stack the input allows, so any
// context-free grammar without left recursion is matched exactly.
//
// Build checks what would make matching unbounded or wrong and fails with a
// message naming the rule: an undefined rule, left recursion (a rule that can
// reach itself without consuming a byte), a grammar that matches nothing, or
// more states than GrammarLimits allow (an exponential regex, a huge
// repetition count). States that cannot reach the end of their rule are
// removed, so every position the matcher keeps can still complete.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "grammar/ast.h"

namespace tern::grammar {

struct GrammarLimits {
  int64_t max_nfa_states = 2'000'000;
  int64_t max_dfa_states = 200'000;
  // NFA states visited by the subset construction (closures, transitions), in
  // all: bounds its time and the memory of its state sets, which a few states
  // of many NFA states each exhaust long before max_dfa_states is reached
  // ((a{0,1000}){0,100}: ~10^5 states of up to ~10^5 NFA states each).
  int64_t max_subset_work = 50'000'000;
};

struct RuleCall {
  int32_t rule;          // the rule called
  int32_t return_state;  // where the caller continues once it has matched
};

class Automaton {
 public:
  static Result<Automaton> Build(const GrammarAst& ast, const GrammarLimits& limits = {});

  int32_t num_states() const { return int32_t(final_.size()); }
  int32_t num_rules() const { return int32_t(rule_start_.size()); }
  int32_t num_byte_classes() const { return num_classes_; }
  // Bytes no transition tells apart share a class.
  uint8_t ByteClass(uint8_t byte) const { return byte_class_[byte]; }
  // The state after `byte`, or -1.
  int32_t Next(int32_t state, uint8_t byte) const {
    return next_[size_t(state) * size_t(num_classes_) + byte_class_[byte]];
  }
  bool IsFinal(int32_t state) const { return final_[size_t(state)]; }
  bool HasBytes(int32_t state) const { return has_bytes_[size_t(state)]; }
  std::span<const RuleCall> Calls(int32_t state) const {
    return std::span<const RuleCall>(calls_).subspan(call_begin_[size_t(state)],
                                                     call_begin_[size_t(state) + 1] - call_begin_[size_t(state)]);
  }
  int32_t RuleOf(int32_t state) const { return rule_of_[size_t(state)]; }
  int32_t RuleStart(int32_t rule) const { return rule_start_[size_t(rule)]; }
  const std::string& RuleName(int32_t rule) const { return rule_name_[size_t(rule)]; }
  int32_t root_rule() const { return root_; }
  // Every state a call of `rule` returns to (its possible contexts).
  std::span<const int32_t> ReturnStates(int32_t rule) const { return follow_[size_t(rule)]; }
  // The heap memory of the tables (transitions: 4 bytes per state and byte
  // class, 190k states x ~40 classes for 10,000 [^x] of a regex).
  size_t memory_bytes() const;

 private:
  friend class AutomatonBuilder;
  int32_t num_classes_ = 0;
  uint8_t byte_class_[256] = {};
  std::vector<int32_t> next_;  // [state * num_classes + class]
  std::vector<uint8_t> final_, has_bytes_;
  std::vector<uint32_t> call_begin_;  // [num_states + 1]
  std::vector<RuleCall> calls_;
  std::vector<int32_t> rule_of_, rule_start_;
  std::vector<std::string> rule_name_;
  std::vector<std::vector<int32_t>> follow_;
  int32_t root_ = 0;
};

// The grammar with small non-recursive rules copied into their callers and
// unreachable rules dropped (inline_rules.cc); Build applies it first.
GrammarAst InlineRules(const GrammarAst& ast);

}  // namespace tern::grammar
