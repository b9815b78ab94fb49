// annotate / unannotate: set or remove an annotation (ForNode::attrs,
// BlockNode::attrs) of a loop or a block. Annotations are hints for code
// generation (e.g. `pragma_auto_unroll_max_step`); they never change what the
// program computes.
//
//   annotate(%l1, "pragma_auto_unroll_max_step", %v2)    (an ExprRV value is
//   unannotate(%b0, "meta_schedule.tiling")               stored as its integer)
//
// Annotating an existing key replaces its value; unannotating a missing key
// is an error.
#include <cctype>
#include <functional>

#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

// The loop (variable) or block (name) that input 0 refers to.
struct Target {
  Var loop;
  std::string block;
};

Target target(const InstArgs& args) {
  if (args.isBlock(0)) return {nullptr, args.block(0)};
  return {args.loop(0), ""};  // reports a missing or wrong argument
}

std::string describe(const Target& t) {
  return t.loop ? ScheduleState::describe(t.loop) : "block \"" + t.block + "\"";
}

// A key as the text format writes it: identifiers joined by dots.
std::string key(const InstArgs& args) {
  std::string k = args.string(1);
  bool ok = !k.empty();
  bool start = true;
  for (char c : k) {
    if (c == '.') {
      ok &= !start;
      start = true;
      continue;
    }
    const bool letter = std::isalpha(static_cast<unsigned char>(c)) || c == '_';
    ok &= letter || (!start && std::isdigit(static_cast<unsigned char>(c)));
    start = false;
  }
  if (!ok || start) args.fail("\"" + k + "\" is not an annotation key (identifiers joined by dots)");
  return k;
}

// The value with trace references replaced by the integers they hold.
AttrValue resolve(const InstArgs& args, const AttrValue& v) {
  if (v.isRef()) return args.integerOf(v);
  if (v.isList()) {
    AttrValue::List out;
    for (const auto& x : v.asList()) out.push_back(resolve(args, x));
    return out;
  }
  return v;
}

// Installs the target rebuilt with `edit` applied to its annotations.
void editAttrs(ScheduleState& s, const Target& t, const std::function<void(Attrs&)>& edit) {
  if (t.loop) {
    StmtPath path = *findLoop(s.func.body, t.loop.get());
    ForParts f(*path.target()->as<ForNode>());
    edit(f.attrs);
    s.setBody(replaceAt(path, f.build()));
  } else {
    StmtPath path = *findBlock(s.func.body, t.block);
    BlockParts b(*path.target()->as<BlockNode>());
    edit(b.attrs);
    s.setBody(replaceAt(path, b.build()));
  }
}

}  // namespace

std::vector<RVValue> applyAnnotate(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(3);
  args.allowAttrs({});
  Target t = target(args);
  std::string k = key(args);
  AttrValue value = resolve(args, args.input(2));
  editAttrs(s, t, [&](Attrs& attrs) { attrs[k] = value; });
  return {};
}

std::vector<RVValue> applyUnannotate(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(2);
  args.allowAttrs({});
  Target t = target(args);
  std::string k = key(args);
  editAttrs(s, t, [&](Attrs& attrs) {
    if (!attrs.erase(k)) s.fail("cannot unannotate " + describe(t) + ": it has no annotation \"" + k + "\"");
  });
  return {};
}

void Schedule::annotate(const LoopRV& loop, const std::string& key, const AttrValue& value) {
  apply(makeInst("annotate", {ref(loop), key, value}));
}
void Schedule::annotate(const BlockRV& block, const std::string& key, const AttrValue& value) {
  apply(makeInst("annotate", {ref(block), key, value}));
}
void Schedule::unannotate(const LoopRV& loop, const std::string& key) {
  apply(makeInst("unannotate", {ref(loop), key}));
}
void Schedule::unannotate(const BlockRV& block, const std::string& key) {
  apply(makeInst("unannotate", {ref(block), key}));
}

}  // namespace mlcc::schedule
