// A task's search space, as MetaSchedule's design spaces: a trace of
// schedule instructions (from the target's default rules, or a user's
// schedule script with sample_* instructions) whose sampling decisions the
// search varies. A candidate is the trace with every decision fixed and the
// function it replays to; a trace that does not replay (a decision the
// changed loops no longer allow) is no candidate.
//
//   SearchSpace space = SearchSpace::fromRules(task.func, target);
//   std::mt19937_64 rng(seed);
//   auto c = space.initial();                   // the rule's own decisions
//   auto m = space.mutate(c->trace, rng);       // one decision changed
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "mlcc/ir/stmt.h"
#include "mlcc/target/target.h"

namespace mlcc::tune {

struct Candidate {
  ir::Trace trace;    // every sampling instruction has its decision
  ir::PrimFunc func;  // the scheduled function
  std::string text;   // ir::printTrace(trace): the candidate's identity
};

class SearchSpace {
 public:
  // The trace of the target's first applicable default rule. Throws
  // mlcc::Error when no rule applies or the rule samples nothing (nothing
  // to search).
  static SearchSpace fromRules(const ir::PrimFunc& unscheduled, const target::Target& target);
  // A hand-written trace (a schedule script's block); its sampling
  // instructions may lack decisions.
  static SearchSpace fromTrace(const ir::PrimFunc& unscheduled, ir::Trace design);

  const ir::PrimFunc& unscheduled() const { return unscheduled_; }
  const ir::Trace& design() const { return design_; }
  // The number of sampling instructions (the decisions searched).
  int decisions() const;

  // The design's own decisions (missing ones sampled with `seed`).
  std::optional<Candidate> initial(uint64_t seed = 0) const;
  // Every decision sampled afresh.
  std::optional<Candidate> sample(std::mt19937_64& rng) const;
  // One decision of `trace` changed (as MetaSchedule's mutators): a tile
  // factor moved between two levels of a sample_perfect_tile, another
  // sample_categorical candidate, a compute location sampled afresh.
  std::optional<Candidate> mutate(const ir::Trace& trace, std::mt19937_64& rng) const;
  // A trace (say, from the database) replayed on the unscheduled function.
  std::optional<Candidate> replay(const ir::Trace& trace, uint64_t seed = 0) const;

 private:
  SearchSpace(ir::PrimFunc f, ir::Trace t) : unscheduled_(std::move(f)), design_(std::move(t)) {}
  ir::PrimFunc unscheduled_;
  ir::Trace design_;
};

}  // namespace mlcc::tune
