// MaskWorker: one background thread per process that computes the token
// masks a grammar's compile left for later (CompiledGrammar::Create stops
// after its CPU budget). Without it a matcher reaching such a state computes
// the mask itself, one trie walk (up to a few ms with the Qwen3 vocabulary)
// inside a decode step; with it the first request's later states are
// usually ready by the time it gets there, and a schema served twice never
// waits. The thread runs at the lowest CPU priority (nice 19) so that model
// forwards keep the cores, holds grammars only by weak_ptr between states
// (an evicted grammar is dropped, not finished), and stops at exit after at
// most the state it is on.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace tern::grammar {

class CompiledGrammar;

class MaskWorker {
 public:
  static MaskWorker& Get();
  // Queues g: its remaining masks are computed in the background.
  void Add(std::weak_ptr<const CompiledGrammar> g);
  ~MaskWorker();

 private:
  MaskWorker() = default;
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::weak_ptr<const CompiledGrammar>> queue_;
  bool stop_ = false;
  std::thread thread_;  // started by the first Add
};

}  // namespace tern::grammar
