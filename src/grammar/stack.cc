#include "grammar/stack.h"

namespace tern::grammar {
namespace {
inline size_t Hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return size_t(k);
}
constexpr uint64_t kEmptyKey = ~uint64_t(0);
}  // namespace

void StackPool::Clear() {
  nodes_.clear();
  main_.assign(1024, {kEmptyKey, -1});
  scratch_.assign(1024, {kEmptyKey, -1});
  main_count_ = scratch_count_ = 0;
  scratch_mode_ = false;
  scratch_slots_.clear();
}

int32_t StackPool::Find(const std::vector<Slot>& table, uint64_t key) const {
  const size_t mask = table.size() - 1;
  for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
    if (table[i].key == key) return table[i].id;
    if (table[i].key == kEmptyKey) return -1;
  }
}

void StackPool::Insert(std::vector<Slot>* table, size_t* count, uint64_t key, int32_t id) {
  if ((*count + 1) * 2 > table->size()) {  // grow at half full
    std::vector<Slot> bigger(table->size() * 2, {kEmptyKey, -1});
    for (const Slot& s : *table)
      if (s.key != kEmptyKey) {
        const size_t mask = bigger.size() - 1;
        size_t i = Hash(s.key) & mask;
        while (bigger[i].key != kEmptyKey) i = (i + 1) & mask;
        bigger[i] = s;
      }
    table->swap(bigger);
  }
  const size_t mask = table->size() - 1;
  size_t i = Hash(key) & mask;
  while ((*table)[i].key != kEmptyKey) i = (i + 1) & mask;
  (*table)[i] = {key, id};
  ++*count;
}

int32_t StackPool::Intern(int32_t state, int32_t parent) {
  const uint64_t key = Key(state, parent);
  if (int32_t id = Find(main_, key); id >= 0) return id;
  if (scratch_mode_)
    if (int32_t id = Find(scratch_, key); id >= 0) return id;
  const int32_t id = int32_t(nodes_.size());
  const int32_t level = parent >= 0 ? nodes_[size_t(parent)].level : parent == kBottom ? -1 : -2 - parent;
  nodes_.push_back({state, parent, level});
  if (scratch_mode_) Insert(&scratch_, &scratch_count_, key, id);
  else Insert(&main_, &main_count_, key, id);
  return id;
}

void StackPool::BeginScratch() {
  scratch_mode_ = true;
  scratch_begin_ = nodes_.size();
}

void StackPool::DropScratch() {
  nodes_.resize(scratch_begin_);
  if (scratch_count_ > 0) {
    if (scratch_.size() > 4096) scratch_.assign(1024, {kEmptyKey, -1});
    else std::fill(scratch_.begin(), scratch_.end(), Slot{kEmptyKey, -1});
  }
  scratch_count_ = 0;
  scratch_mode_ = false;
}

void StackRunner::Add(PositionSet* set, int32_t node) {
  if (seen_.size() <= size_t(node)) seen_.resize(size_t(node) + 1 + seen_.size() / 2, 0);
  if (seen_[size_t(node)] == epoch_) return;
  seen_[size_t(node)] = epoch_;
  set->nodes.push_back(node);
}

void StackRunner::Close(PositionSet* set) {
  // The common case inside a rule: one position that neither calls nor ends.
  if (set->nodes.size() == 1) {
    const int32_t state = pool_.node(set->nodes[0]).state;
    if (!a_.IsFinal(state) && a_.Calls(state).empty()) return;
  }
  ++epoch_;
  start_.swap(set->nodes);
  set->nodes.clear();
  for (int32_t n : start_) Add(set, n);
  for (size_t i = 0; i < set->nodes.size(); ++i) {
    const StackPool::Node n = pool_.node(set->nodes[i]);
    for (const RuleCall& c : a_.Calls(n.state))
      Add(set, pool_.Intern(a_.RuleStart(c.rule), pool_.Intern(c.return_state, n.parent)));
    if (!a_.IsFinal(n.state)) continue;
    if (n.parent >= 0) {
      Add(set, n.parent);
    } else if (n.parent == kBottom) {
      set->can_end = true;
    } else {
      const int level = -2 - n.parent;
      if (level >= max_level_) {
        set->unknown = true;
        continue;
      }
      for (int32_t r : a_.ReturnStates(a_.RuleOf(n.state))) Add(set, pool_.Intern(r, ContextMarker(level + 1)));
    }
  }
}

void StackRunner::Advance(const PositionSet& in, uint8_t byte, PositionSet* out) {
  out->nodes.clear();
  out->can_end = false;
  out->unknown = in.unknown;
  for (int32_t id : in.nodes) {
    const StackPool::Node n = pool_.node(id);
    if (const int32_t t = a_.Next(n.state, byte); t >= 0) out->nodes.push_back(pool_.Intern(t, n.parent));
  }
  Close(out);
}

}  // namespace tern::grammar
