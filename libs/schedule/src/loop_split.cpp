// split: one serial loop becomes len(factors) nested loops, outermost first.
//
//   %l3, %l4 = split(%l1, [%v1, 8])      factors: integers, ExprRVs, or -1
//                                        (inferred from the extent, at most one)
//
// The old loop variable is replaced below by the combination of the new ones
// (`%i_0 * 8 + %i_1`). When the factors do not tile the extent exactly (a
// product larger than a constant extent, or an inferred factor over a
// symbolic extent: ceil(n / f)), every block under the loop gets the
// predicate `combination < extent` in its `where`. A product smaller than the
// extent is an error. Assumes every store under the loop is in a block (the
// predicate guards blocks only); otherwise a non-exact split is refused.
// The loop's annotations stay on the outermost new loop.
#include "loops.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/printer.h"
#include "state.h"

namespace mlcc::schedule {

using namespace ir;
using namespace ir::build;

namespace {

// "[2, -1, %v4 = 8]" for messages.
std::string factorsText(const InstArgs& args, const AttrValue::List& list) {
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out += ", ";
    out += printAttrValue(list[i]);
    if (list[i].isRef()) out += " = " + std::to_string(args.integerOf(list[i]));
  }
  return out + "]";
}

}  // namespace

std::vector<RVValue> applySplit(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(2);
  args.allowAttrs({});
  Var v = args.loop(0);
  const AttrValue& input = args.input(1);
  if (!input.isList() || input.asList().empty()) args.fail("argument 2 must be a non-empty list of factors");
  const AttrValue::List& list = input.asList();

  StmtPath path = *findLoop(s.func.body, v.get());
  const ForNode& loop = *path.target()->as<ForNode>();
  const std::string name = ScheduleState::describe(v);
  if (loop.loop_kind != LoopKind::serial)
    s.fail("cannot split " + name + ": it is " + kindText(loop) + "; split loop %" + v->name +
           " before changing its kind");

  // The factors; the inferred one (if any) is computed below.
  std::vector<PrimExpr> factors(list.size());
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].isInt() && list[i].asInt() == -1) {
      if (inferred) args.fail("at most one factor may be -1 (inferred), in " + factorsText(args, list));
      inferred = i;
      continue;
    }
    int64_t f = args.integerOf(list[i]);
    if (f < 1)
      s.fail("cannot split " + name + ": factor " + std::to_string(f) + " in " + factorsText(args, list) +
             " is less than 1");
    if (__builtin_mul_overflow(known, f, &known))
      s.fail("cannot split " + name + ": the factors " + factorsText(args, list) + " overflow i64");
    factors[i] = makeInt(f);
  }

  Analyzer az = contextAnalyzer(path, path.nodes.size() - 1);
  const PrimExpr& extent = loop.extent;
  int64_t const_extent;
  const bool is_const = asConstInt(extent, &const_extent);
  if (inferred) {
    factors[*inferred] = is_const ? makeInt(const_extent / known + (const_extent % known != 0))
                                  : az.simplify((extent + (known - 1)) / known);
  } else if (!az.canProve(ge(makeInt(known), extent))) {
    if (is_const)
      s.fail("cannot split " + name + ": the factors " + factorsText(args, list) + " multiply to " +
             std::to_string(known) + ", less than its extent " + std::to_string(const_extent));
    s.fail("cannot split " + name + ": the factors " + factorsText(args, list) + " multiply to " +
           std::to_string(known) + ", which may not cover its extent " + printExpr(extent) +
           " (write -1 for one factor to infer it)");
  }

  // The new loops and the combination that replaces the old variable.
  std::vector<Var> vars;
  PrimExpr combined;
  for (size_t i = 0; i < factors.size(); ++i) {
    vars.push_back(makeVar(v->name + "_" + std::to_string(i)));
    az.bind(vars.back(), makeInt(0), factors[i]);
    combined = combined ? combined * factors[i] + vars.back() : PrimExpr(vars.back());
  }
  combined = az.simplify(combined);
  PrimExpr predicate = lt(combined, extent);
  const bool guarded = !az.canProve(predicate);
  if (guarded) checkOnlyBlocks(s, loop, "split " + name + " by factors that do not divide its extent");

  Stmt body = substituteLoopVars(loop.body, {{v, combined}}, az);
  if (guarded) {
    body = mapChildBlocks(body, [&](const BlockNode& b) {
      BlockParts p(b);
      p.predicate = p.predicate ? land(p.predicate, predicate) : predicate;
      return p.build();
    });
  }
  for (size_t i = vars.size(); i-- > 0;)
    body = makeFor(vars[i], factors[i], body, LoopKind::serial, {}, i == 0 ? loop.attrs : Attrs{});
  s.setBody(replaceAt(path, body));

  std::vector<RVValue> out;
  for (const auto& x : vars) out.push_back(LoopHandle{x});
  return out;
}

std::vector<LoopRV> Schedule::split(const LoopRV& loop, const std::vector<Factor>& factors) {
  AttrValue::List list;
  for (const auto& f : factors) {
    if (!f)
      list.push_back(int64_t{-1});
    else if (const auto* i = std::get_if<int64_t>(&*f))
      list.push_back(*i);
    else
      list.push_back(ref(std::get<ExprRV>(*f)));
  }
  return asRVs<LoopRV>(apply(makeInst("split", {ref(loop), list})));
}

}  // namespace mlcc::schedule
