// Parse positions of the pushdown automaton: a position is a stack of
// automaton states, stored as interned nodes (state, parent) so that equal
// stacks are one id and a set of positions is a small vector of ids.
//
// The parent of a bottom node is kBottom (the grammar's real start) or a
// context marker ContextLevel(L): token_masks.cc runs tokens from a single
// state whose callers are unknown; popping past level L stands for
// continuing in any caller of the rule, at level L + 1.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/automaton.h"

namespace tern::grammar {

inline constexpr int32_t kBottom = -1;
inline constexpr int32_t ContextMarker(int level) { return -2 - level; }

class StackPool {
 public:
  struct Node {
    int32_t state;
    int32_t parent;  // node id, kBottom, or a context marker
    int32_t level;   // -1 above kBottom; L above ContextMarker(L)
  };

  StackPool() { Clear(); }
  // Interns (state, parent). In scratch mode new nodes go to a region that
  // DropScratch() removes again (mask computation explores, then forgets).
  int32_t Intern(int32_t state, int32_t parent);
  const Node& node(int32_t id) const { return nodes_[size_t(id)]; }
  size_t size() const { return nodes_.size(); }
  void Clear();
  void BeginScratch();
  void DropScratch();

 private:
  struct Slot {
    uint64_t key;
    int32_t id;
  };
  static uint64_t Key(int32_t state, int32_t parent) { return (uint64_t(uint32_t(state)) << 32) | uint32_t(parent); }
  int32_t Find(const std::vector<Slot>& table, uint64_t key) const;
  static void Insert(std::vector<Slot>* table, size_t* count, uint64_t key, int32_t id);

  std::vector<Node> nodes_;
  std::vector<Slot> main_, scratch_;
  size_t main_count_ = 0, scratch_count_ = 0;
  bool scratch_mode_ = false;
  size_t scratch_begin_ = 0;
  std::vector<size_t> scratch_slots_;
};

// A set of positions and the flags its closure found.
struct PositionSet {
  std::vector<int32_t> nodes;
  bool can_end = false;  // some stack completed the root rule (the input so far is a match)
  bool unknown = false;  // some stack popped past the deepest context level tracked
};

class StackRunner {
 public:
  // max_level: how many levels of unknown callers are followed (context markers).
  StackRunner(const Automaton& a, StackPool& pool, int max_level = 3) : a_(a), pool_(pool), max_level_(max_level) {}

  // Adds what `set` reaches without consuming input: the start of every rule
  // a state calls, and the caller's state once a rule can end.
  void Close(PositionSet* set);
  // The positions after one byte (closed), from positions whose own state
  // takes the byte. in.unknown carries over.
  void Advance(const PositionSet& in, uint8_t byte, PositionSet* out);

 private:
  void Add(PositionSet* set, int32_t node);
  const Automaton& a_;
  StackPool& pool_;
  int max_level_;
  std::vector<uint32_t> seen_;
  std::vector<int32_t> start_;  // scratch of Close
  uint32_t epoch_ = 0;
};

}  // namespace tern::grammar
