// Sampling instructions: integers drawn with the schedule's random generator,
// recorded as decisions so that replay reproduces them and a tuner can change
// them. (sample_compute_location lives with compute_at.)
//
//   %v1, %v2 = sample_perfect_tile(%l0, max_innermost_factor = 16, n = 2) decision [8, 32]
//     n factors whose product is the loop's constant extent, the innermost at
//     most max_innermost_factor (default 16): the innermost is uniform among
//     the extent's divisors within the bound, the rest of the extent's prime
//     factors go to uniformly chosen outer positions.
//   %v3 = sample_categorical(candidates = [1, 2, 4], probs = [0.5, 0.25, 0.25]) decision 1
//     one candidate with the given probabilities; the decision is its index.
//
// A decision given in the trace is checked (a wrong one is a schedule error)
// and used instead of sampling.
#include <cmath>

#include "mlcc/ir/printer.h"
#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

std::vector<int64_t> primeFactors(int64_t x) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p <= x / p; ++p)
    for (; x % p == 0; x /= p) out.push_back(p);
  if (x > 1) out.push_back(x);
  return out;
}

// The divisors of x that are at most `limit`, ascending.
std::vector<int64_t> divisorsUpTo(int64_t x, int64_t limit) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d <= x / d; ++d) {
    if (x % d) continue;
    if (d <= limit) small.push_back(d);
    if (x / d != d && x / d <= limit) large.push_back(x / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

}  // namespace

std::vector<RVValue> applySamplePerfectTile(ScheduleState& s, const InstArgs& args,
                                            std::optional<AttrValue>& decision) {
  args.expectCount(1);
  args.allowAttrs({"max_innermost_factor", "n"});
  Var v = args.loop(0);
  if (!args.attr("n")) args.fail("needs the number of factors, n = ...");
  const int64_t n = args.intAttr("n", 0);
  const int64_t max_inner = args.intAttr("max_innermost_factor", 16);
  if (n < 1 || n > 64) args.fail("n = " + std::to_string(n) + " must be between 1 and 64");
  if (max_inner < 1) args.fail("max_innermost_factor = " + std::to_string(max_inner) + " must be at least 1");
  const ForNode& loop = s.loop(v);
  int64_t extent;
  if (!asConstInt(loop.extent, &extent))
    s.fail("cannot sample a perfect tile of " + ScheduleState::describe(v) + ": its extent " +
           printExpr(loop.extent) + " is not a constant");
  if (extent < 1)
    s.fail("cannot sample a perfect tile of " + ScheduleState::describe(v) + ": its extent is " +
           std::to_string(extent));

  std::vector<int64_t> factors;
  if (decision) {
    const std::string what = "decision " + printAttrValue(*decision) + " for " + ScheduleState::describe(v) +
                             " (extent " + std::to_string(extent) + ")";
    if (!decision->isList() || decision->asList().size() != static_cast<size_t>(n))
      args.fail(what + ": expected a list of " + std::to_string(n) + " integers");
    int64_t product = 1;
    for (const auto& x : decision->asList()) {
      if (!x.isInt() || x.asInt() < 1) args.fail(what + ": every factor must be an integer >= 1");
      factors.push_back(x.asInt());
      if (__builtin_mul_overflow(product, x.asInt(), &product)) args.fail(what + ": the product overflows");
    }
    if (product != extent)
      args.fail(what + ": the factors multiply to " + std::to_string(product) + ", not " +
                std::to_string(extent));
    if (factors.back() > max_inner)
      args.fail(what + ": the innermost factor exceeds max_innermost_factor = " + std::to_string(max_inner));
  } else {
    std::vector<int64_t> inner = divisorsUpTo(extent, max_inner);
    if (n == 1) inner = extent <= max_inner ? std::vector<int64_t>{extent} : std::vector<int64_t>{};
    if (inner.empty())
      s.fail("cannot sample a perfect tile of " + ScheduleState::describe(v) + ": its extent " +
             std::to_string(extent) +
             " is one factor, larger than max_innermost_factor = " + std::to_string(max_inner));
    factors.assign(static_cast<size_t>(n), 1);
    factors.back() = inner[static_cast<size_t>(s.randomIndex(static_cast<int64_t>(inner.size())))];
    for (int64_t p : primeFactors(extent / factors.back()))
      factors[static_cast<size_t>(s.randomIndex(n - 1))] *= p;
    decision = AttrValue::ints(factors);
  }
  std::vector<RVValue> out;
  for (int64_t f : factors) out.push_back(f);
  return out;
}

std::vector<RVValue> applySampleCategorical(ScheduleState& s, const InstArgs& args,
                                            std::optional<AttrValue>& decision) {
  args.expectCount(0);
  args.allowAttrs({"candidates", "probs"});
  const AttrValue* c = args.attr("candidates");
  const AttrValue* p = args.attr("probs");
  if (!c || !p) args.fail("needs candidates = [...] and probs = [...]");
  if (!c->isList() || !p->isList()) args.fail("candidates and probs must be lists");
  std::vector<int64_t> candidates;
  for (const auto& x : c->asList()) {
    if (!x.isInt()) args.fail("candidates must be integers, not " + printAttrValue(x));
    candidates.push_back(x.asInt());
  }
  std::vector<double> probs;
  double sum = 0;
  for (const auto& x : p->asList()) {
    if (!x.isFloat() && !x.isInt()) args.fail("probs must be numbers, not " + printAttrValue(x));
    probs.push_back(x.isFloat() ? x.asFloat() : static_cast<double>(x.asInt()));
    if (!(probs.back() >= 0) || !std::isfinite(probs.back()))
      args.fail("probability " + printAttrValue(x) + " is not a number >= 0");
    sum += probs.back();
  }
  if (candidates.empty()) args.fail("needs at least one candidate");
  if (candidates.size() != probs.size())
    args.fail(std::to_string(candidates.size()) + " candidates but " + std::to_string(probs.size()) +
              " probabilities");
  if (std::fabs(sum - 1.0) > 1e-6) args.fail("the probabilities sum to " + std::to_string(sum) + ", not 1");

  const auto count = static_cast<int64_t>(candidates.size());
  int64_t index;
  if (decision) {
    if (!decision->isInt() || decision->asInt() < 0 || decision->asInt() >= count)
      args.fail("decision " + printAttrValue(*decision) + " is not an index of the " + std::to_string(count) +
                " candidates (0 to " + std::to_string(count - 1) + ")");
    index = decision->asInt();
  } else {
    // u uniform in [0, sum): the first candidate whose cumulative probability
    // exceeds it (computed from the raw bits, the same on every platform).
    const double u = static_cast<double>(s.rng() >> 11) * 0x1.0p-53 * sum;
    index = -1;
    double cumulative = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (probs[static_cast<size_t>(i)] == 0) continue;
      cumulative += probs[static_cast<size_t>(i)];
      index = i;
      if (u < cumulative) break;
    }
    decision = AttrValue(index);
  }
  return {candidates[static_cast<size_t>(index)]};
}

std::vector<ExprRV> Schedule::samplePerfectTile(const LoopRV& loop, int n, int64_t max_innermost_factor) {
  return asRVs<ExprRV>(apply(makeInst("sample_perfect_tile", {ref(loop)},
                                      {{"n", n}, {"max_innermost_factor", max_innermost_factor}})));
}

ExprRV Schedule::sampleCategorical(const std::vector<int64_t>& candidates, const std::vector<double>& probs) {
  AttrValue::List p;
  for (double x : probs) p.push_back(x);
  return ExprRV{apply(
      makeInst("sample_categorical", {}, {{"candidates", AttrValue::ints(candidates)}, {"probs", p}}))[0]};
}

}  // namespace mlcc::schedule
