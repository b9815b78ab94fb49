// Graph types, variables, attribute values and module lookups.
#include "mlcc/ir/graph.h"

#include "mlcc/ir/builder.h"
#include "mlcc/ir/module.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {

Type Type::tensor(DType t, std::vector<PrimExpr> shape) {
  Type ty;
  ty.kind = Kind::Tensor;
  ty.dtype = t;
  ty.shape = std::move(shape);
  return ty;
}

Type Type::tensor(DType t, const std::vector<int64_t>& shape) {
  std::vector<PrimExpr> dims;
  for (int64_t d : shape) dims.push_back(makeInt(d));
  return tensor(t, std::move(dims));
}

Type Type::tuple(std::vector<Type> fields) {
  Type ty;
  ty.kind = Kind::Tuple;
  ty.fields = std::move(fields);
  return ty;
}

GraphVar makeGraphVar(std::string name, Type type) {
  return std::make_shared<GraphVarNode>(std::move(name), std::move(type));
}

const char* valueKindName(ValueKind k) {
  switch (k) {
    case ValueKind::Alias: return "alias";
    case ValueKind::Const: return "const";
    case ValueKind::Tuple: return "tuple";
    case ValueKind::TupleGet: return "tuple_get";
    case ValueKind::Op: return "op";
    case ValueKind::CallTir: return "call_tir";
    case ValueKind::CallExtern: return "call_extern";
    case ValueKind::CallGraph: return "call";
  }
  return "?";
}

AttrValue::AttrValue(PrimExpr e) {
  int64_t c;
  if (e && e->dtype == DType::i64 && asConstInt(e, &c))
    v = c;
  else
    v = std::move(e);
}

AttrValue AttrValue::ints(const std::vector<int64_t>& values) {
  List l;
  for (int64_t x : values) l.emplace_back(x);
  return AttrValue(std::move(l));
}

std::vector<int64_t> AttrValue::asInts(const char* what) const {
  if (!isList()) throw Error(std::string(what) + " must be a list of integers");
  std::vector<int64_t> out;
  for (const auto& x : asList()) {
    if (!x.isInt()) throw Error(std::string(what) + " must be a list of integers");
    out.push_back(x.asInt());
  }
  return out;
}

const std::string& functionName(const Function& f) {
  return std::visit([](const auto& fn) -> const std::string& { return fn.name; }, f);
}

namespace {
// The function of kind F named `name` in `functions`, or nullptr.
template <class F>
F* findFunction(std::vector<Function>& functions, const std::string& name) {
  for (auto& f : functions)
    if (auto* fn = std::get_if<F>(&f); fn && fn->name == name) return fn;
  return nullptr;
}
}  // namespace

GraphFunc* Module::findGraph(const std::string& name) { return findFunction<GraphFunc>(functions, name); }
const GraphFunc* Module::findGraph(const std::string& name) const {
  return const_cast<Module*>(this)->findGraph(name);
}
PrimFunc* Module::findPrim(const std::string& name) { return findFunction<PrimFunc>(functions, name); }
const PrimFunc* Module::findPrim(const std::string& name) const {
  return const_cast<Module*>(this)->findPrim(name);
}
bool Module::hasFunction(const std::string& name) const {
  for (const auto& f : functions)
    if (functionName(f) == name) return true;
  return false;
}

namespace build {
BufferRegion point(const Buffer& b, const std::vector<PrimExpr>& idx) {
  BufferRegion r{b, {}};
  for (const auto& i : idx) r.region.push_back(Range{i, makeInt(1)});
  return r;
}
BufferRegion whole(const Buffer& b) {
  BufferRegion r{b, {}};
  for (const auto& d : b->shape) r.region.push_back(Range{makeInt(0), d});
  return r;
}
}  // namespace build

}  // namespace mlcc::ir
