#include "engine/prefix_cache.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <queue>
#include <unordered_map>

namespace tern {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t HashTokens(std::span<const int32_t> tokens) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int32_t t : tokens) h = Mix(h ^ uint64_t(uint32_t(t)));
  return h;
}

}  // namespace

struct PrefixCache::Node {
  Node* parent = nullptr;
  int32_t block = -1;
  uint64_t hash = 0;
  std::vector<int32_t> tokens;  // [block_size]: the tokens whose KV the block holds
  uint64_t last_use = 0;
  std::vector<int32_t> snapshot;  // recurrent state after this node's tokens (hybrid models); the cache's blocks
  std::unordered_multimap<uint64_t, std::unique_ptr<Node>> children;
};

PrefixCache::PrefixCache(BlockAllocator& alloc, int32_t block_size, bool enabled, int64_t state_blocks)
    : alloc_(alloc),
      block_size_(block_size),
      enabled_(enabled),
      state_blocks_(state_blocks),
      root_(std::make_unique<Node>()),
      node_of_block_(size_t(alloc.num_blocks()), nullptr) {}

PrefixCache::~PrefixCache() {
  // Give the cache's references back (the allocator outlives the cache).
  std::vector<Node*> stack = {root_.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n->block >= 0) alloc_.Release(n->block);
    for (int32_t b : n->snapshot) alloc_.Release(b);
    for (auto& [h, c] : n->children) stack.push_back(c.get());
  }
}

PrefixCache::Node* PrefixCache::FindChild(Node* parent, std::span<const int32_t> key) const {
  auto [lo, hi] = parent->children.equal_range(HashTokens(key));
  for (auto it = lo; it != hi; ++it)
    if (std::equal(key.begin(), key.end(), it->second->tokens.begin(), it->second->tokens.end()))
      return it->second.get();
  return nullptr;
}

PrefixCache::Node* PrefixCache::AddChild(Node* parent, std::span<const int32_t> key, int32_t block) {
  auto node = std::make_unique<Node>();
  node->parent = parent;
  node->block = block;
  node->hash = HashTokens(key);
  node->tokens.assign(key.begin(), key.end());
  Node* raw = node.get();
  parent->children.emplace(node->hash, std::move(node));
  node_of_block_[size_t(block)] = raw;
  alloc_.Retain(block);  // the cache's reference
  ++num_nodes_;
  return raw;
}

int64_t PrefixCache::Weight(const Node* n) { return 1 + int64_t(n->snapshot.size()); }

void PrefixCache::RetainCached(int32_t block) {
  if (alloc_.ref_count(block) == 1) --evictable_;  // (its snapshot stays evictable: Evict)
  alloc_.Retain(block);
}

int64_t PrefixCache::Match(std::span<const int32_t> tokens, int64_t limit, std::vector<int32_t>& blocks,
                           Cursor& cursor, int64_t* kv_tokens) {
  assert(blocks.empty());
  cursor = {};
  if (kv_tokens != nullptr) *kv_tokens = 0;
  if (!enabled_) return 0;
  limit = std::min<int64_t>(limit, int64_t(tokens.size()));
  const uint64_t now = ++clock_;
  // With snapshots, only a node that has one can resume a sequence: find the deepest first.
  int64_t depth = std::numeric_limits<int64_t>::max();
  if (state_blocks_ > 0) {
    depth = 0;
    Node* n = root_.get();
    for (int64_t i = 0; (i + 1) * block_size_ <= limit; ++i) {
      n = FindChild(n, tokens.subspan(size_t(i * block_size_), size_t(block_size_)));
      if (n == nullptr) break;
      if (!n->snapshot.empty()) depth = i + 1;
      if (kv_tokens != nullptr) *kv_tokens = (i + 1) * block_size_;
    }
  }
  Node* n = root_.get();
  int64_t i = 0;
  while ((i + 1) * block_size_ <= limit && i < depth) {
    Node* c = FindChild(n, tokens.subspan(size_t(i * block_size_), size_t(block_size_)));
    if (c == nullptr) break;
    RetainCached(c->block);
    c->last_use = now;
    blocks.push_back(c->block);
    n = c;
    ++i;
  }
  cursor = {n, i};
  if (kv_tokens != nullptr && state_blocks_ == 0) *kv_tokens = i * block_size_;
  return i * block_size_;
}

void PrefixCache::Insert(std::span<const int32_t> tokens, int64_t computed, std::vector<int32_t>& blocks,
                         Cursor& cursor) {
  if (!enabled_) return;
  const int64_t full = std::min<int64_t>(std::min<int64_t>(computed, int64_t(tokens.size())) / block_size_,
                                         int64_t(blocks.size()));
  if (full <= cursor.blocks) return;
  Node* n = cursor.node ? cursor.node : root_.get();
  const uint64_t now = ++clock_;
  for (int64_t i = cursor.blocks; i < full; ++i) {
    const auto key = tokens.subspan(size_t(i * block_size_), size_t(block_size_));
    Node* c = FindChild(n, key);
    if (c == nullptr) {
      c = AddChild(n, key, blocks[size_t(i)]);
    } else if (c->block != blocks[size_t(i)]) {
      // Another sequence cached this prefix first: use its block, free ours.
      RetainCached(c->block);
      alloc_.Release(blocks[size_t(i)]);
      blocks[size_t(i)] = c->block;
    }
    c->last_use = now;
    n = c;
  }
  cursor = {n, full};
}

bool PrefixCache::Allocate(int64_t n, std::vector<int32_t>& out) {
  if (n > available()) return false;
  if (alloc_.num_free() < n) {
    // Each eviction scans the tree, so free a little ahead (1/64 of the pool)
    // rather than scanning again at the next block a decoding sequence needs.
    const int64_t ahead = std::min<int64_t>(alloc_.num_blocks() / 64, evictable_);
    Evict(std::max(n - alloc_.num_free(), ahead), n - alloc_.num_free());
  }
  return alloc_.Allocate(n, out);
}

std::span<const int32_t> PrefixCache::SnapshotAt(const Cursor& cursor) const {
  if (cursor.node == nullptr) return {};
  return cursor.node->snapshot;
}

bool PrefixCache::AddSnapshot(const Cursor& cursor, int64_t depth, int64_t keep_free, std::vector<int32_t>& out) {
  out.clear();
  if (!enabled_ || state_blocks_ <= 0 || depth <= 0 || depth > cursor.blocks || cursor.node == nullptr) return false;
  Node* n = cursor.node;
  for (int64_t d = cursor.blocks; d > depth; --d) n = n->parent;
  if (!n->snapshot.empty()) return false;
  if (available() - state_blocks_ < keep_free || !Allocate(state_blocks_, out)) {
    out.clear();
    return false;
  }
  // Evictable at once, although the node is on a running sequence's path:
  // that sequence has the state in its own slot (Evict).
  n->snapshot = out;
  evictable_ += state_blocks_;
  ++num_snapshots_;
  return true;
}

void PrefixCache::Release(std::vector<int32_t>& blocks, Cursor& cursor) {
  for (int32_t b : blocks) {
    alloc_.Release(b);
    Node* n = node_of_block_[size_t(b)];
    if (n != nullptr && alloc_.ref_count(b) == 1) ++evictable_;
  }
  blocks.clear();
  cursor = {};
}

int64_t PrefixCache::Evict(int64_t n, int64_t hard) {
  // Unused leaves, least recently used first (SGLang's evict with the LRU policy);
  // a parent whose last child goes becomes a candidate in turn.
  auto older = [](const Node* a, const Node* b) { return a->last_use > b->last_use; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(older)> heap(older);
  std::vector<Node*> stack = {root_.get()};
  while (!stack.empty()) {
    Node* x = stack.back();
    stack.pop_back();
    for (auto& [h, c] : x->children) stack.push_back(c.get());
    if (x != root_.get() && x->children.empty() && alloc_.ref_count(x->block) == 1) heap.push(x);
  }
  int64_t freed = 0;
  while (freed < n && !heap.empty()) {
    Node* x = heap.top();
    heap.pop();
    Node* parent = x->parent;
    const int32_t block = x->block;
    node_of_block_[size_t(block)] = nullptr;
    evictable_ -= Weight(x);
    freed += Weight(x);
    --num_nodes_;
    alloc_.Release(block);  // the cache's reference was the last
    if (!x->snapshot.empty()) --num_snapshots_;
    for (int32_t b : x->snapshot) alloc_.Release(b);
    auto [lo, hi] = parent->children.equal_range(x->hash);
    for (auto it = lo; it != hi; ++it)
      if (it->second.get() == x) {
        parent->children.erase(it);
        break;
      }
    if (parent != root_.get() && parent->children.empty() && alloc_.ref_count(parent->block) == 1) heap.push(parent);
  }
  if (freed >= hard || num_snapshots_ == 0) return freed;
  // Then the snapshots of nodes that running sequences hold (every node left
  // with one is held: an unused one would have been a leaf or above one),
  // least recently used first. Nothing running needs them: a sequence that
  // resumed from one loaded it into its own state slot when it was admitted,
  // and one that made one has that state itself. Only later requests would
  // have resumed there. Held, they would keep a request that fits the empty
  // pool from ever being admitted, or end one running alone for want of KV.
  std::vector<Node*> held;
  stack = {root_.get()};
  while (!stack.empty()) {
    Node* x = stack.back();
    stack.pop_back();
    for (auto& [h, c] : x->children) stack.push_back(c.get());
    if (!x->snapshot.empty()) held.push_back(x);
  }
  std::sort(held.begin(), held.end(), [](const Node* a, const Node* b) { return a->last_use < b->last_use; });
  for (Node* x : held) {
    if (freed >= hard) break;
    for (int32_t b : x->snapshot) alloc_.Release(b);
    evictable_ -= int64_t(x->snapshot.size());
    freed += int64_t(x->snapshot.size());
    x->snapshot.clear();
    --num_snapshots_;
  }
  return freed;
}

int64_t PrefixCache::Flush() { return Evict(std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()); }

}  // namespace tern
