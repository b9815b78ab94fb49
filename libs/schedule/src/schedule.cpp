// The Schedule: applies instructions, keeps the random variables, records
// the trace and re-verifies the function after each step; replay.
#include "mlcc/schedule/schedule.h"

#include <algorithm>
#include <cctype>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;

// --- instruction table -------------------------------------------------------

namespace {
const InstructionKind kInstructions[] = {
#define MLCC_INSTRUCTION(name, fn) {#name, &fn},
#include "instructions.def"
#undef MLCC_INSTRUCTION
};
}  // namespace

const InstructionKind* findInstruction(const std::string& name) {
  for (const auto& k : kInstructions)
    if (name == k.name) return &k;
  return nullptr;
}

std::vector<std::string> instructionNames() {
  std::vector<std::string> names;
  for (const auto& k : kInstructions) names.emplace_back(k.name);
  std::sort(names.begin(), names.end());
  return names;
}

TraceInst makeInst(std::string name, std::vector<AttrValue> inputs, Attrs attrs) {
  TraceInst inst;
  inst.name = std::move(name);
  inst.inputs = std::move(inputs);
  inst.attrs = std::move(attrs);
  return inst;
}

// --- state -------------------------------------------------------------------

ScheduleState::ScheduleState(PrimFunc f, uint64_t seed) : func(std::move(f)), rng(seed) {
  for (const auto& inst : func.trace.insts)
    for (const auto& o : inst.outputs) used_names.insert(o);
  std::set<std::string> names;
  forEachBlock(func.body, [&](const BlockNode& b, const StmtPath&) {
    if (!names.insert(b.name).second)
      fail("block names must be unique to schedule a function; \"" + b.name + "\" appears more than once");
  });
}

void ScheduleState::fail(const std::string& message) const {
  throw ScheduleError("in prim @" + func.name + ": " + message);
}

std::string ScheduleState::describe(const Var& loop_var) { return "loop %" + loop_var->name; }

std::string ScheduleState::describe(const BlockNode& block) { return "block \"" + block.name + "\""; }

const BlockNode& ScheduleState::block(const std::string& name) const {
  auto p = findBlock(func.body, name);
  if (!p) fail("no block \"" + name + "\" (it was removed, or never existed)");
  return *p->target()->as<BlockNode>();
}

const ForNode& ScheduleState::loop(const Var& var) const {
  auto p = findLoop(func.body, var.get());
  if (!p) fail("loop %" + var->name + " is no longer in the function (a primitive replaced it)");
  return *p->target()->as<ForNode>();
}

std::string ScheduleState::freshName(const char* prefix) {
  for (;;) {
    std::string n = prefix + std::to_string(next_name++);
    if (used_names.insert(n).second) return n;
  }
}

int64_t ScheduleState::randomIndex(int64_t n) {
  std::uniform_int_distribution<int64_t> d(0, n - 1);
  return d(rng);
}

// --- arguments ---------------------------------------------------------------

void InstArgs::fail(const std::string& message) const { s_.fail(inst_.name + ": " + message); }

void InstArgs::expectCount(size_t n) const {
  if (inst_.inputs.size() != n)
    fail("takes " + std::to_string(n) + " positional argument" + (n == 1 ? "" : "s") + ", not " +
         std::to_string(inst_.inputs.size()));
}

const AttrValue& InstArgs::input(size_t i) const {
  if (i >= inst_.inputs.size()) fail("missing argument " + std::to_string(i + 1));
  return inst_.inputs[i];
}

const RVValue& InstArgs::rv(const AttrValue& v) const {
  auto it = s_.rvs.find(v.asRef().name);
  if (it == s_.rvs.end()) fail("%" + v.asRef().name + " is not defined");
  return it->second;
}

std::string InstArgs::block(size_t i) const {
  const AttrValue& v = input(i);
  if (!v.isRef())
    fail("argument " + std::to_string(i + 1) + " must be a block (%b...), not " + printAttrValue(v));
  const auto* b = std::get_if<BlockHandle>(&rv(v));
  if (!b) fail("%" + v.asRef().name + " is not a block");
  s_.block(b->block);  // still there?
  return b->block;
}

bool InstArgs::isBlock(size_t i) const {
  const AttrValue& v = input(i);
  if (!v.isRef()) return false;
  auto it = s_.rvs.find(v.asRef().name);
  return it != s_.rvs.end() && std::holds_alternative<BlockHandle>(it->second);
}

Var InstArgs::loopOf(const AttrValue& v, bool allow_root) const {
  if (!v.isRef()) fail("expected a loop (%l...), not " + printAttrValue(v));
  const auto* l = std::get_if<LoopHandle>(&rv(v));
  if (!l) fail("%" + v.asRef().name + " is not a loop");
  if (!l->var) {
    if (!allow_root) fail("%" + v.asRef().name + " is the root, not a loop");
    return nullptr;
  }
  s_.loop(l->var);  // still there?
  return l->var;
}

Var InstArgs::loop(size_t i, bool allow_root) const { return loopOf(input(i), allow_root); }

int64_t InstArgs::integerOf(const AttrValue& v) const {
  if (v.isInt()) return v.asInt();
  if (v.isRef()) {
    const auto* x = std::get_if<int64_t>(&rv(v));
    if (!x) fail("%" + v.asRef().name + " is not an integer");
    return *x;
  }
  fail("expected an integer, not " + printAttrValue(v));
}

int64_t InstArgs::integer(size_t i) const { return integerOf(input(i)); }

std::string InstArgs::string(size_t i) const {
  const AttrValue& v = input(i);
  if (!v.isString())
    fail("argument " + std::to_string(i + 1) + " must be a string, not " + printAttrValue(v));
  return v.asString();
}

std::vector<Var> InstArgs::loops(size_t i) const {
  const AttrValue& v = input(i);
  if (!v.isList()) fail("argument " + std::to_string(i + 1) + " must be a list of loops");
  std::vector<Var> out;
  for (const auto& x : v.asList()) out.push_back(loopOf(x));
  return out;
}

std::vector<Var> InstArgs::distinctLoops(size_t i, const std::string& verb) const {
  std::vector<Var> vars = loops(i);
  if (vars.empty()) fail("needs at least one loop");
  for (size_t a = 0; a < vars.size(); ++a)
    for (size_t b = 0; b < a; ++b)
      if (vars[a] == vars[b])
        s_.fail("cannot " + verb + ": " + ScheduleState::describe(vars[a]) + " is given twice");
  return vars;
}

const AttrValue* InstArgs::attr(const std::string& key) const {
  auto it = inst_.attrs.find(key);
  return it == inst_.attrs.end() ? nullptr : &it->second;
}

int64_t InstArgs::intAttr(const std::string& key, int64_t fallback) const {
  const AttrValue* v = attr(key);
  if (!v) return fallback;
  if (!v->isInt()) fail(key + " must be an integer, not " + printAttrValue(*v));
  return v->asInt();
}

bool InstArgs::boolAttr(const std::string& key, bool fallback) const {
  const AttrValue* v = attr(key);
  if (!v) return fallback;
  if (!v->isBool()) fail(key + " must be true or false, not " + printAttrValue(*v));
  return v->asBool();
}

std::string InstArgs::stringAttr(const std::string& key, const std::string& fallback) const {
  const AttrValue* v = attr(key);
  if (!v) return fallback;
  if (!v->isString()) fail(key + " must be a string, not " + printAttrValue(*v));
  return v->asString();
}

void InstArgs::allowAttrs(const std::vector<std::string>& known) const {
  for (const auto& [k, v] : inst_.attrs) {
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string list;
    for (const auto& x : known) list += (list.empty() ? "" : ", ") + x;
    fail("unknown keyword argument '" + k + "'" +
         (list.empty() ? " (it takes none)" : " (known: " + list + ")"));
  }
}

// --- Schedule ----------------------------------------------------------------

Schedule::Schedule(PrimFunc func, uint64_t seed)
    : state_(std::make_unique<ScheduleState>(std::move(func), seed)) {}
Schedule::~Schedule() = default;
Schedule::Schedule(Schedule&&) noexcept = default;
Schedule& Schedule::operator=(Schedule&&) noexcept = default;

const PrimFunc& Schedule::func() const { return state_->func; }

namespace {
const char* prefixOf(const RVValue& v) {
  if (std::holds_alternative<BlockHandle>(v)) return "b";
  if (std::holds_alternative<LoopHandle>(v)) return "l";
  return "v";
}
}  // namespace

std::vector<std::string> Schedule::apply(const TraceInst& inst) {
  ScheduleState& s = *state_;
  const InstructionKind* kind = findInstruction(inst.name);
  if (!kind) {
    std::string names;
    for (const auto& n : instructionNames()) names += (names.empty() ? "" : ", ") + n;
    s.fail("unknown schedule instruction '" + inst.name + "' (known: " + names + ")");
  }
  for (const auto& o : inst.outputs)
    if (s.rvs.count(o)) s.fail(inst.name + ": %" + o + " is already defined");

  PrimFunc before = s.func;
  std::optional<AttrValue> decision = inst.decision;
  std::vector<RVValue> outputs;
  try {
    outputs = kind->apply(s, InstArgs(s, inst), decision);
  } catch (...) {
    s.func = std::move(before);  // a failed primitive changes nothing
    throw;
  }
  if (!inst.outputs.empty() && inst.outputs.size() != outputs.size()) {
    s.func = std::move(before);
    s.fail(inst.name + " gives " + std::to_string(outputs.size()) + " output" +
           (outputs.size() == 1 ? "" : "s") + ", but the trace names " + std::to_string(inst.outputs.size()));
  }
  try {
    verifyPrimFunc(s.func);
  } catch (const mlcc::Error& e) {
    std::string msg = e.message();
    s.func = std::move(before);
    s.fail("internal error: " + inst.name + " produced invalid IR: " + msg);
  }

  TraceInst recorded = inst;
  recorded.decision = decision;
  recorded.outputs.clear();
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string name = inst.outputs.empty() ? s.freshName(prefixOf(outputs[i])) : inst.outputs[i];
    s.used_names.insert(name);
    s.rvs[name] = outputs[i];
    recorded.outputs.push_back(name);
  }
  s.func.trace.insts.push_back(std::move(recorded));
  return s.func.trace.insts.back().outputs;
}

int64_t Schedule::get(const ExprRV& v) const {
  auto it = state_->rvs.find(v.name);
  if (it == state_->rvs.end() || !std::holds_alternative<int64_t>(it->second))
    state_->fail("%" + v.name + " is not a sampled integer");
  return std::get<int64_t>(it->second);
}

Var Schedule::loopVar(const LoopRV& loop) const {
  auto it = state_->rvs.find(loop.name);
  if (it == state_->rvs.end() || !std::holds_alternative<LoopHandle>(it->second))
    state_->fail("%" + loop.name + " is not a loop");
  return std::get<LoopHandle>(it->second).var;
}

PrimFunc replayTrace(const PrimFunc& unscheduled, const Trace& trace, uint64_t seed) {
  Schedule sch(unscheduled, seed);
  for (const auto& inst : trace.insts) sch.apply(inst);
  return sch.func();
}

}  // namespace mlcc::schedule
