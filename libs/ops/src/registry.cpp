// The op registry: registration of every op family, lookup, attribute
// normalization, checked inference/compute, and the hooks into libs/ir.
#include <algorithm>
#include <map>
#include <mutex>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/diagnostic.h"
#include "op_families.h"
#include "op_util.h"

namespace mlcc::ops {

namespace {

std::map<std::string, OpDef, std::less<>>& registry() {
  static std::map<std::string, OpDef, std::less<>> ops;
  static std::once_flag once;
  std::call_once(once, [] {
    for (OpDef& def : registerAllOpFamilies()) {
      std::string name = def.name;
      ops.emplace(std::move(name), std::move(def));
    }
  });
  return ops;
}

bool kindMatches(AttrKind kind, const ir::AttrValue& v) {
  auto listOf = [&](auto pred) {
    if (!v.isList()) return false;
    for (const auto& x : v.asList())
      if (!pred(x)) return false;
    return true;
  };
  switch (kind) {
    case AttrKind::Int: return v.isInt();
    case AttrKind::Float: return v.isFloat() || v.isInt();
    case AttrKind::Bool: return v.isBool();
    case AttrKind::Str: return v.isString();
    case AttrKind::Ints: return listOf([](const ir::AttrValue& x) { return x.isInt(); });
    case AttrKind::Floats: return listOf([](const ir::AttrValue& x) { return x.isFloat() || x.isInt(); });
    case AttrKind::Dims:
      return listOf([](const ir::AttrValue& x) {
        return x.isInt() || (x.isExpr() && x.asExpr()->dtype == ir::DType::i64);
      });
  }
  return false;
}

const ir::AttrValue& getAttr(const ir::Attrs& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) throw Error("missing attribute '" + name + "'");
  return it->second;
}

std::string typeList(const std::vector<ir::Type>& types) {
  std::string s;
  for (const auto& t : types) s += (s.empty() ? "" : ", ") + ir::printType(t);
  return s;
}

bool hasF64(const ir::Type& t) {
  if (t.isTensor()) return t.dtype == ir::DType::f64;
  return std::any_of(t.fields.begin(), t.fields.end(), hasF64);
}

const OpDef& checkedOp(const std::string& op, size_t num_inputs) {
  const OpDef* def = findOp(op);
  if (!def) throw Error("unknown op '" + op + "'");
  if (static_cast<int>(num_inputs) < def->min_inputs ||
      (def->max_inputs >= 0 && static_cast<int>(num_inputs) > def->max_inputs)) {
    std::string want = def->min_inputs == def->max_inputs ? std::to_string(def->min_inputs)
                       : def->max_inputs < 0
                           ? "at least " + std::to_string(def->min_inputs)
                           : std::to_string(def->min_inputs) + " to " + std::to_string(def->max_inputs);
    throw Error("op '" + op + "' takes " + want + " operand(s), not " + std::to_string(num_inputs));
  }
  return *def;
}

}  // namespace

const char* patternName(OpPattern p) {
  switch (p) {
    case OpPattern::Elementwise: return "elementwise";
    case OpPattern::Broadcast: return "broadcast";
    case OpPattern::Injective: return "injective";
    case OpPattern::Reduction: return "reduction";
    case OpPattern::OutEwiseFusable: return "out_elementwise_fusable";
    case OpPattern::Opaque: return "opaque";
  }
  return "?";
}

const char* attrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "an int";
    case AttrKind::Float: return "a float";
    case AttrKind::Bool: return "a bool";
    case AttrKind::Str: return "a string";
    case AttrKind::Ints: return "a list of ints";
    case AttrKind::Floats: return "a list of floats";
    case AttrKind::Dims: return "a list of dimensions";
  }
  return "?";
}

const OpDef* findOp(std::string_view name) {
  auto& ops = registry();
  auto it = ops.find(name);
  return it == ops.end() ? nullptr : &it->second;
}

std::vector<const OpDef*> allOps() {
  std::vector<const OpDef*> out;
  for (const auto& [name, def] : registry()) out.push_back(&def);
  return out;
}

ir::Attrs normalizeAttrs(const OpDef& op, const ir::Attrs& attrs) {
  ir::Attrs out;
  for (const auto& [key, value] : attrs) {
    auto spec =
        std::find_if(op.attrs.begin(), op.attrs.end(), [&](const AttrSpec& s) { return s.name == key; });
    if (spec == op.attrs.end()) {
      std::string known;
      for (const auto& s : op.attrs) known += (known.empty() ? "" : ", ") + s.name;
      throw Error("op '" + op.name + "' has no attribute '" + key + "'" +
                  (known.empty() ? " (it takes none)" : " (it takes: " + known + ")"));
    }
    if (!kindMatches(spec->kind, value))
      throw Error("op '" + op.name + "': attribute '" + key + "' must be " + attrKindName(spec->kind) +
                  ", not " + ir::printAttrValue(value));
    out[key] = value;
  }
  for (const auto& spec : op.attrs) {
    if (out.count(spec.name)) continue;
    if (spec.default_value)
      out[spec.name] = *spec.default_value;
    else if (!spec.optional)
      throw Error("op '" + op.name + "' needs attribute '" + spec.name + "'");
  }
  return out;
}

ir::Type inferOpType(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Attrs& attrs) {
  const OpDef& def = checkedOp(op, inputs.size());
  ir::Attrs full = normalizeAttrs(def, attrs);
  try {
    ir::Type out = def.infer(inputs, full);
    if (!def.f64 && (hasF64(out) || std::any_of(inputs.begin(), inputs.end(), hasF64)))
      throw Error("op '" + op + "' does not support f64 yet");
    // A result no tensor can have (from crafted attributes or shapes) is an
    // error here, where the op is known, not a module the verifier refuses.
    if (std::string e = ir::typeSizeError(out); !e.empty()) throw Error("the result " + e);
    return out;
  } catch (const Error& e) {
    std::string msg = e.message();
    if (msg.rfind("op '" + op + "'", 0) == 0) throw;
    throw Error("op '" + op + "' on (" + typeList(inputs) + "): " + msg);
  }
}

std::vector<ir::Tensor> computeOp(const std::string& op, const std::vector<ir::Tensor>& inputs,
                                  const ir::Attrs& attrs) {
  std::vector<ir::Type> types;
  for (const auto& t : inputs) types.push_back(ir::Type::tensor(t.dtype(), t.shape()));
  inferOpType(op, types, attrs);  // the same checks as at compile time
  const OpDef& def = *findOp(op);
  if (!def.compute) throw Error("op '" + op + "' has no reference kernel yet");
  return def.compute(inputs, normalizeAttrs(def, attrs));
}

ir::PrimFunc legalizeOp(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Attrs& attrs,
                        const std::string& func_name) {
  ir::Type output = inferOpType(op, inputs, attrs);
  const OpDef& def = *findOp(op);
  if (!def.legalize) throw Error("op '" + op + "' cannot be lowered to TensorIR yet");
  ir::PrimFunc f = def.legalize(inputs, output, normalizeAttrs(def, attrs));
  f.name = func_name;
  return f;
}

namespace {

// The registry behind ops::opTypeInfo().
class RegistryOpTypes final : public ir::OpTypeInfo {
 public:
  void checkBinding(const ir::GraphFunc&, const ir::Binding& b) const override {
    ir::Type inferred = inferOpType(b.value.callee, argTypes(b), b.value.attrs);
    if (!typesEquivalent(inferred, b.var->type))
      throw Error("op '" + b.value.callee + "' gives " + ir::printType(inferred) + ", but %" + b.var->name +
                  " is declared " + ir::printType(b.var->type));
  }

  int64_t flops(const ir::Binding& b) const override {
    const OpDef* def = findOp(b.value.callee);
    if (!def) return 0;
    ir::Attrs attrs;
    try {
      attrs = normalizeAttrs(*def, b.value.attrs);
    } catch (const Error&) {
      return 0;
    }
    if (def->flops) return def->flops(argTypes(b), b.var->type, attrs);
    return b.var->type.isTensor() ? staticCount(b.var->type.shape) : 0;
  }

 private:
  static std::vector<ir::Type> argTypes(const ir::Binding& b) {
    std::vector<ir::Type> types;
    for (const auto& a : b.value.args) types.push_back(a->type);
    return types;
  }
};

}  // namespace

const ir::OpTypeInfo& opTypeInfo() {
  static const RegistryOpTypes registry;
  return registry;
}

int64_t attrInt(const ir::Attrs& attrs, const std::string& name) { return getAttr(attrs, name).asInt(); }
double attrFloat(const ir::Attrs& attrs, const std::string& name) {
  const auto& v = getAttr(attrs, name);
  return v.isInt() ? static_cast<double>(v.asInt()) : v.asFloat();
}
bool attrBool(const ir::Attrs& attrs, const std::string& name) { return getAttr(attrs, name).asBool(); }
const std::string& attrStr(const ir::Attrs& attrs, const std::string& name) {
  return getAttr(attrs, name).asString();
}
std::vector<int64_t> attrInts(const ir::Attrs& attrs, const std::string& name) {
  return getAttr(attrs, name).asInts(name.c_str());
}
std::vector<double> attrFloats(const ir::Attrs& attrs, const std::string& name) {
  std::vector<double> out;
  for (const auto& x : getAttr(attrs, name).asList())
    out.push_back(x.isInt() ? static_cast<double>(x.asInt()) : x.asFloat());
  return out;
}
bool hasAttr(const ir::Attrs& attrs, const std::string& name) { return attrs.count(name) > 0; }

int64_t normalizeAxis(int64_t axis, int64_t rank, const char* op) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    throw Error(std::string("op '") + op + "': axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace mlcc::ops
