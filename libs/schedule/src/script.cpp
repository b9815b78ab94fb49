// Applying schedule scripts (see script.h): each block's instructions run on
// its prim func through Schedule::apply; errors are located at the script.
#include "mlcc/schedule/script.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "mlcc/schedule/schedule.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

AttrValue renamed(const AttrValue& v, const std::map<std::string, std::string>& names) {
  if (v.isRef()) {
    auto it = names.find(v.asRef().name);
    return it == names.end() ? v : AttrValue(TraceRef{it->second});
  }
  if (v.isList()) {
    AttrValue::List items;
    for (const auto& x : v.asList()) items.push_back(renamed(x, names));
    return AttrValue(std::move(items));
  }
  return v;
}

// A name like `b12` -> its prefix "b".
std::string prefixOf(const std::string& name) {
  size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  return end == 0 ? "v" : name.substr(0, end);
}

mlcc::Error errorAt(const ScheduleScript& script, const SourceLoc& loc, const std::string& message) {
  return mlcc::Error(loc, message, lineOf(script.text, loc.line));
}

// Applies one block to `f`.
void applyBlock(PrimFunc& f, const ScheduleScript& script, const ScheduleScript::Block& block,
                uint64_t seed) {
  // Names already used by the function's trace or anywhere in this block.
  std::set<std::string> existing, used;
  for (const auto& inst : f.trace.insts)
    for (const auto& o : inst.outputs) existing.insert(o);
  used = existing;
  for (const auto& inst : block.trace.insts)
    for (const auto& o : inst.outputs) used.insert(o);
  std::map<std::string, std::string> names;  // script name -> trace name, where they differ

  Schedule sch(f, seed);
  for (size_t i = 0; i < block.trace.insts.size(); ++i) {
    const TraceInst& src = block.trace.insts[i];
    TraceInst inst = src;
    for (auto& v : inst.inputs) v = renamed(v, names);
    for (auto& [key, v] : inst.attrs) v = renamed(v, names);
    if (inst.decision) inst.decision = renamed(*inst.decision, names);
    for (auto& o : inst.outputs) {
      if (!existing.count(o)) continue;
      std::string fresh;
      for (int n = 0; used.count(fresh = prefixOf(o) + std::to_string(n)); ++n) {
      }
      used.insert(fresh);
      names[o] = fresh;
      o = fresh;
    }
    const SourceLoc& loc = i < block.inst_locs.size() ? block.inst_locs[i] : block.loc;
    try {
      sch.apply(inst);
    } catch (const ScheduleError& e) {
      throw errorAt(script, loc, e.message());
    } catch (const mlcc::Error& e) {
      throw errorAt(script, loc, "in prim @" + f.name + ": " + src.name + ": " + e.message());
    }
  }
  f = sch.func();
}

}  // namespace

std::vector<std::string> applyScheduleScript(Module& m, const ScheduleScript& script, uint64_t seed) {
  Module result = m;
  std::vector<std::string> scheduled;
  for (const auto& block : script.blocks) {
    PrimFunc* f = result.findPrim(block.func);
    if (!f) {
      std::string why = result.findGraph(block.func)
                            ? "@" + block.func + " is a graph function, not a prim func"
                            : "no prim func @" + block.func + " in the module";
      throw errorAt(script, block.loc, why);
    }
    applyBlock(*f, script, block, seed);
    if (std::find(scheduled.begin(), scheduled.end(), block.func) == scheduled.end())
      scheduled.push_back(block.func);
  }
  m = std::move(result);
  return scheduled;
}

}  // namespace mlcc::schedule
