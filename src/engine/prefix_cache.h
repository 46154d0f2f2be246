// PrefixCache: KV blocks kept by token prefix, so a request whose prompt
// starts like an earlier one (same system prompt, earlier turns of a chat, the
// other choices of an n > 1 request) reuses their keys and values instead of
// recomputing them — SGLang's RadixAttention at block granularity.
//
// The cache is a tree of full blocks: a node is one block of block_size
// tokens, its parent the block before it, so a path from the root spells a
// token prefix. Children are found by a hash of their tokens (the tokens are
// compared too, so a collision can never return the wrong KV).
//
// Ownership is the BlockAllocator's reference count: a node holds one
// reference to its block and every sequence using it holds another. A block
// only the cache holds (count 1) is *evictable*. Sequences hold whole paths
// from the root (Match gives a path; Insert extends it, switching a sequence
// to the cached copy of a block another sequence computed first), so an
// evictable node's whole subtree is evictable too, and eviction takes
// least-recently-used leaves first, never cutting a path anyone uses.
//
// Only full blocks are shared; a sequence's partly filled last block is its
// own. A block's KV depends only on the tokens before it, never on sampling.
//
// Hybrid models (recurrent layers, such as Qwen3.5's Gated DeltaNet): cached
// KV alone cannot resume a sequence, which also needs the recurrent state at
// the position it resumes from (SGLang's MambaRadixCache keeps both). With
// state_blocks > 0 a node may carry a *snapshot*: the recurrent state after
// the node's last token, held in state_blocks blocks of the same pool (so its
// memory is the pool's, counted and evicted like KV). Match then stops at the
// deepest node with a snapshot. A snapshot is evicted with its node, or
// alone once nothing else is left to evict: a node that running sequences
// hold keeps its KV block, while its snapshot, which they no longer read
// (they hold the state in their own slots), counts as evictable.
//
// With `enabled` false every call degrades to plain allocation: Match finds
// nothing, Insert keeps nothing. Not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/block_allocator.h"

namespace tern {

class PrefixCache {
 public:
  struct Node;
  // A sequence's place in the tree: its first `blocks` blocks are the nodes on
  // the path from the root to `node`.
  struct Cursor {
    Node* node = nullptr;
    int64_t blocks = 0;
  };

  // state_blocks: blocks per recurrent-state snapshot (0: KV only).
  PrefixCache(BlockAllocator& alloc, int32_t block_size, bool enabled, int64_t state_blocks = 0);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  bool enabled() const { return enabled_; }

  // The longest cached prefix of tokens[0, limit), in whole blocks (with
  // snapshots: the longest that ends at a node with one). Appends its blocks
  // to `blocks` (which must be empty), one reference each, and points `cursor`
  // at its end. Returns the number of tokens matched. *kv_tokens (if given):
  // the tokens whose KV alone is cached, snapshot or not (with snapshots, the
  // point where a sequence should publish one so that the next request with
  // this prefix can resume there; without, the return value).
  int64_t Match(std::span<const int32_t> tokens, int64_t limit, std::vector<int32_t>& blocks, Cursor& cursor,
                int64_t* kv_tokens = nullptr);

  // Records a sequence's full blocks: those covering tokens[0, computed) (the
  // positions whose KV is written) past cursor.blocks become nodes. Where the
  // tree already holds a block for the same prefix, the sequence switches to
  // it (blocks[i] changes; its own copy is released).
  void Insert(std::span<const int32_t> tokens, int64_t computed, std::vector<int32_t>& blocks, Cursor& cursor);

  // Appends n fresh blocks to `out`, evicting unused cached blocks (least
  // recently used first) when the pool is short. False, taking nothing, when
  // even that is not enough.
  bool Allocate(int64_t n, std::vector<int32_t>& out);

  // The snapshot at the cursor's node (the state after its tokens); empty if none.
  std::span<const int32_t> SnapshotAt(const Cursor& cursor) const;
  // Gives the node `depth` blocks deep on the cursor's path (depth <=
  // cursor.blocks) a snapshot: allocates state_blocks blocks for it into `out`
  // (evicting unused cached blocks, but leaving at least `keep_free` blocks
  // available to running sequences) for the caller to fill now. False, doing
  // nothing, when the node has one already, depth is 0, or there is no room.
  bool AddSnapshot(const Cursor& cursor, int64_t depth, int64_t keep_free, std::vector<int32_t>& out);

  // Drops a sequence's references to its blocks and resets its cursor.
  void Release(std::vector<int32_t>& blocks, Cursor& cursor);

  // Evicts every unused cached block; returns how many were freed.
  int64_t Flush();

  // Blocks free now or after evicting unused cached ones.
  int64_t available() const { return alloc_.num_free() + evictable_; }
  // Cached blocks no sequence uses (every snapshot's, held node or not).
  int64_t evictable() const { return evictable_; }
  // Blocks in the tree (KV nodes; snapshots not counted).
  int64_t cached() const { return num_nodes_; }
  // Nodes holding a recurrent-state snapshot, and blocks per snapshot.
  int64_t snapshots() const { return num_snapshots_; }
  int64_t state_blocks() const { return state_blocks_; }

 private:
  Node* FindChild(Node* parent, std::span<const int32_t> key) const;
  Node* AddChild(Node* parent, std::span<const int32_t> key, int32_t block);
  // Takes a sequence's reference on a cached block.
  void RetainCached(int32_t block);
  // Frees unused leaves (LRU first) until n blocks are freed, then the
  // snapshots of held nodes (LRU first) until `hard` are: the look-ahead that
  // spares the next allocations a scan takes no snapshot a sequence holds.
  int64_t Evict(int64_t n, int64_t hard);
  // Blocks a node frees when evicted: its own and its snapshot's.
  static int64_t Weight(const Node* n);

  BlockAllocator& alloc_;
  const int32_t block_size_;
  const bool enabled_;
  const int64_t state_blocks_;
  std::unique_ptr<Node> root_;
  std::vector<Node*> node_of_block_;  // [num_blocks]: the node holding a block, or null
  int64_t evictable_ = 0;
  int64_t num_nodes_ = 0;
  int64_t num_snapshots_ = 0;
  uint64_t clock_ = 0;  // LRU time
};

}  // namespace tern
