// Search spaces: candidates from a design trace by replaying it with its
// decisions, with fresh samples, or with one decision mutated.
#include "mlcc/tune/search_space.h"

#include "mlcc/ir/printer.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::tune {

namespace {

bool isSampling(const ir::TraceInst& inst) { return inst.name.rfind("sample_", 0) == 0; }

std::vector<int64_t> primeFactors(int64_t n) {
  std::vector<int64_t> primes;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      primes.push_back(p);
      n /= p;
    }
  if (n > 1) primes.push_back(n);
  return primes;
}

// Moves one prime factor of a perfect tile from one level to another,
// keeping the innermost within max_innermost_factor. False when no move is
// possible.
bool mutateTile(ir::TraceInst& inst, std::mt19937_64& rng) {
  std::vector<int64_t> f = inst.decision->asInts("decision");
  if (f.size() < 2) return false;
  int64_t max_inner = 16;
  if (auto it = inst.attrs.find("max_innermost_factor"); it != inst.attrs.end())
    max_inner = it->second.asInt();
  for (int attempt = 0; attempt < 16; ++attempt) {
    const size_t from = std::uniform_int_distribution<size_t>(0, f.size() - 1)(rng);
    if (f[from] <= 1) continue;
    const auto primes = primeFactors(f[from]);
    const int64_t p = primes[std::uniform_int_distribution<size_t>(0, primes.size() - 1)(rng)];
    size_t to = std::uniform_int_distribution<size_t>(0, f.size() - 2)(rng);
    if (to >= from) ++to;
    if (to == f.size() - 1 && f[to] * p > max_inner) continue;
    f[from] /= p;
    f[to] *= p;
    inst.decision = ir::AttrValue::ints(f);
    return true;
  }
  return false;
}

bool mutateCategorical(ir::TraceInst& inst, std::mt19937_64& rng) {
  auto it = inst.attrs.find("candidates");
  if (it == inst.attrs.end() || !it->second.isList() || it->second.asList().size() < 2) return false;
  const int64_t count = static_cast<int64_t>(it->second.asList().size());
  int64_t next = std::uniform_int_distribution<int64_t>(0, count - 2)(rng);
  if (next >= inst.decision->asInt()) ++next;
  inst.decision = ir::AttrValue(next);
  return true;
}

}  // namespace

SearchSpace SearchSpace::fromRules(const ir::PrimFunc& unscheduled, const target::Target& target) {
  auto r = schedule::scheduleWithRules(unscheduled, target);
  if (!r) throw Error("prim func @" + unscheduled.name + ": no default rule applies");
  SearchSpace space(unscheduled, r->func.trace);
  if (space.decisions() == 0)
    throw Error("prim func @" + unscheduled.name + ": rule \"" + r->rule + "\" samples nothing to search");
  return space;
}

SearchSpace SearchSpace::fromTrace(const ir::PrimFunc& unscheduled, ir::Trace design) {
  return SearchSpace(unscheduled, std::move(design));
}

int SearchSpace::decisions() const {
  int n = 0;
  for (const auto& inst : design_.insts) n += isSampling(inst);
  return n;
}

std::optional<Candidate> SearchSpace::replay(const ir::Trace& trace, uint64_t seed) const {
  try {
    ir::PrimFunc f = schedule::replayTrace(unscheduled_, trace, seed);
    Candidate c{f.trace, f, ir::printTrace(f.trace)};
    return c;
  } catch (const Error&) {
    return std::nullopt;  // a decision the loops no longer allow
  }
}

std::optional<Candidate> SearchSpace::initial(uint64_t seed) const { return replay(design_, seed); }

std::optional<Candidate> SearchSpace::sample(std::mt19937_64& rng) const {
  ir::Trace t = design_;
  for (auto& inst : t.insts)
    if (isSampling(inst)) inst.decision.reset();
  return replay(t, rng());
}

std::optional<Candidate> SearchSpace::mutate(const ir::Trace& trace, std::mt19937_64& rng) const {
  std::vector<size_t> sites;
  for (size_t i = 0; i < trace.insts.size(); ++i)
    if (isSampling(trace.insts[i]) && trace.insts[i].decision) sites.push_back(i);
  if (sites.empty()) return std::nullopt;
  for (int attempt = 0; attempt < 8; ++attempt) {
    ir::Trace t = trace;
    ir::TraceInst& inst = t.insts[sites[std::uniform_int_distribution<size_t>(0, sites.size() - 1)(rng)]];
    bool changed = false;
    if (inst.name == "sample_perfect_tile") {
      changed = mutateTile(inst, rng);
    } else if (inst.name == "sample_categorical") {
      changed = mutateCategorical(inst, rng);
    } else {
      inst.decision.reset();  // sampled afresh by the replay
      changed = true;
    }
    if (!changed) continue;
    if (auto c = replay(t, rng())) return c;
  }
  return std::nullopt;
}

}  // namespace mlcc::tune
