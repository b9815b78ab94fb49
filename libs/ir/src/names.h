// Spelling of names in the IR text: which identifiers are reserved, and how
// %locals, @functions, $symbolic variables and strings are quoted. Shared by
// the printer and the parser. Internal to libs/ir.
#pragma once

#include <string>
#include <string_view>

namespace mlcc::ir::detail {

// Words a bare symbolic variable may not be spelt as (keywords, dtypes,
// literals such as inf/nan, min/max/select/cast and intrinsic names).
bool isReservedWord(std::string_view word);

// True when `name` can follow '%' or '@' unquoted: [A-Za-z0-9_.]+.
bool isPlainName(std::string_view name);
// True when `name` is an identifier [A-Za-z_][A-Za-z0-9_]*.
bool isIdentifier(std::string_view name);

// "..." with \" \\ \n \t and \xHH escapes for other non-printable bytes.
std::string quoteString(std::string_view s);
// %name or %"name"; @name or @"name".
std::string localName(std::string_view name);
std::string globalName(std::string_view name);
// A symbolic variable: `n`, or `$"name"` when it is reserved or not an identifier.
std::string symbolicName(std::string_view name);

}  // namespace mlcc::ir::detail
