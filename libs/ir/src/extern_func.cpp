// User library functions (module.h ExternFunc): the module's lookup and the
// type of a call, binding the declaration's dimension variables to the
// operands' dimensions.
#include <unordered_map>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/module.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::ir {

const ExternFunc* findExtern(const std::vector<ExternFunc>& externs, const std::string& name) {
  for (const auto& e : externs)
    if (e.name == name) return &e;
  return nullptr;
}

const ExternFunc* Module::findExtern(const std::string& name) const { return ir::findExtern(externs, name); }

std::optional<Type> externCallType(const ExternFunc& f, const std::vector<Type>& args, std::string* why) {
  auto fail = [&](const std::string& message) -> std::optional<Type> {
    if (why) *why = message;
    return std::nullopt;
  };
  if (args.size() != f.params.size())
    return fail("\"" + f.name + "\" takes " + std::to_string(f.params.size()) + " operand(s), not " +
                std::to_string(args.size()));
  std::unordered_map<const VarNode*, PrimExpr> dims;
  for (size_t i = 0; i < args.size(); ++i) {
    const Type& p = f.params[i]->type;
    const Type& a = args[i];
    auto mismatch = [&](const std::string& detail) {
      return fail("operand " + std::to_string(i + 1) + " of \"" + f.name + "\" is " + printType(a) +
                  ", the parameter %" + f.params[i]->name + " is " + printType(p) + " (" + detail + ")");
    };
    if (!a.isTensor()) return mismatch("not a tensor");
    if (a.dtype != p.dtype) return mismatch("another dtype");
    if (a.rank() != p.rank()) return mismatch("another rank");
    for (size_t k = 0; k < p.rank(); ++k) {
      PrimExpr want = p.shape[k];
      if (auto* var = want->as<VarNode>()) {
        auto [it, fresh] = dims.try_emplace(var, a.shape[k]);
        if (fresh) continue;
        want = it->second;
      }
      if (!structuralEqual(simplify(want), simplify(a.shape[k])))
        return mismatch("dimension " + std::to_string(k) + " differs");
    }
  }
  std::vector<PrimExpr> shape;
  for (const auto& d : f.ret_type.shape) shape.push_back(simplify(substitute(d, dims)));
  return Type::tensor(f.ret_type.dtype, std::move(shape));
}

}  // namespace mlcc::ir
