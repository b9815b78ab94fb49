// blockize: wraps the loop nest under a loop in a new opaque block (TVM's
// blockize), the unit that tensorize replaces by a library routine. The new
// block has no iteration variables; its regions are the tile of each buffer
// that the nest reads or writes in one execution, in terms of the loops
// outside it.
//
//   %b4 = blockize(%l2)
//   for %i0 { for %i1 in 0..16 { block "c" (%v = spatial(64, %i0 * 16 + %i1)) { reads(%a[%v]) ... } } }
//   -> for %i0 { block "c_o" { reads(%a[%i0 * 16 : 16]) ... for %i1 in 0..16 { block "c" ... } } }
//
// The nest must be perfect: loops, each the only statement in the one above,
// around one block whose body is one store. The program computes the same.
#include "cache_util.h"
#include "loops.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/substitute.h"
#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

// `r` (in the block's iteration variables) widened over the nest's loops.
BufferRegion widened(const BufferRegion& r, const std::unordered_map<const VarNode*, PrimExpr>& bindings,
                     const Analyzer& az) {
  BufferRegion out{r.buffer, {}};
  for (size_t d = 0; d < r.region.size(); ++d) {
    const Range& range = r.region[d];
    PrimExpr lo = substitute(range.min, bindings);
    PrimExpr hi = substitute(
        makeBinary(BinaryOp::Sub, makeBinary(BinaryOp::Add, range.min, range.extent), makeInt(1)), bindings);
    auto lo_b = az.bounds(lo), hi_b = az.bounds(hi);
    if (!lo_b || !hi_b) {
      out.region.push_back({makeInt(0), r.buffer->shape[d]});
      continue;
    }
    PrimExpr extent =
        az.simplify(makeBinary(BinaryOp::Add, makeBinary(BinaryOp::Sub, hi_b->max, lo_b->min), makeInt(1)));
    out.region.push_back({az.simplify(lo_b->min), extent});
  }
  return out;
}

// An opaque block named `name` around the nest at `root`, with the regions
// of nest.block (its reads, then its writes) widened over the nest's loops.
Stmt blockAround(const Stmt& root, const PerfectNest& nest, const std::string& name) {
  Analyzer az;
  for (const ForNode* f : nest.loops) az.bind(f->loop_var, makeInt(0), f->extent);
  std::unordered_map<const VarNode*, PrimExpr> bindings;
  for (const auto& iv : nest.block->iter_vars) bindings[iv.var.get()] = iv.binding;
  std::vector<BufferRegion> reads, writes;
  for (const auto& r : nest.block->reads) reads.push_back(widened(r, bindings, az));
  for (const auto& r : nest.block->writes) writes.push_back(widened(r, bindings, az));
  return makeBlock(name, {}, std::move(reads), std::move(writes), root);
}

}  // namespace

std::vector<RVValue> applyBlockize(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({});
  Var loop = args.loop(0);
  StmtPath path = *findLoop(s.func.body, loop.get());
  std::string why;
  auto nest = perfectNest(path.target(), &why);
  if (!nest) s.fail("cannot blockize " + ScheduleState::describe(loop) + ": " + why);
  const std::string name = uniqueBlockName(s.func, nest->block->name + "_o");
  s.setBody(replaceAt(path, blockAround(path.target(), *nest, name)));
  return {BlockHandle{name}};
}

BlockRV Schedule::blockize(const LoopRV& loop) {
  return BlockRV{apply(makeInst("blockize", {ref(loop)}))[0]};
}

}  // namespace mlcc::schedule
