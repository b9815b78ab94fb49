// The IR text printer. The text is the canonical form of a module: the
// parser reads it back exactly (print(parse(text)) == text), and the same
// module always prints to the same bytes. Names are printed as stored;
// where two different variables (or buffers) in one scope share a name the
// printer makes them unique with a numeric suffix.
#pragma once

#include <string>

#include "mlcc/ir/module.h"

namespace mlcc::ir {

std::string printModule(const Module& m);
std::string printFunction(const Function& f);      // one function, as in a module
std::string printExternFunc(const ExternFunc& f);  // one extern declaration line
std::string printExpr(const PrimExpr& e);
std::string printStmt(const Stmt& s);
std::string printType(const Type& t);
std::string printAttrValue(const AttrValue& v);
std::string printTrace(const Trace& t);
// A list of integers for messages: "[2, 3, 4]"; beyond `max_shown` entries
// "[1, 2, ..., (100000 in all)]" (a crafted attribute may hold millions).
std::string intsText(const std::vector<int64_t>& v, size_t max_shown = 16);

// The shortest decimal text that reads back to exactly `v` ("1.0", "0.1",
// "1e-07", "inf", "nan"). Used for float literals and attributes.
std::string formatFloat(double v, DType t = DType::f32);

}  // namespace mlcc::ir
