// Name spelling rules of the IR text (see names.h).
#include "names.h"

#include <cstdio>

#include "mlcc/ir/dtype.h"
#include "mlcc/ir/intrinsics.h"

namespace mlcc::ir::detail {

namespace {
constexpr std::string_view kKeywords[] = {
    "true",         "false",          "inf",     "nan",      "inff16", "infbf16",  "inff32",
    "nanf16",       "nanbf16",        "nanf32",  "min",      "max",    "select",   "cast",
    "graph",        "prim",           "weights", "dataflow", "return", "const",    "call",
    "call_tir",     "call_extern",    "attrs",   "for",      "in",     "block",    "where",
    "reads",        "writes",         "init",    "if",       "else",   "trace",    "decision",
    "alloc_buffer", "spatial",        "reduce",  "opaque",   "serial", "parallel", "vectorized",
    "unrolled",     "thread_binding", "global",  "shared",   "local",  "mlcc"};
}  // namespace

bool isReservedWord(std::string_view word) {
  for (auto k : kKeywords)
    if (k == word) return true;
  return parseDType(word).has_value() || findIntrinsic(word) != nullptr;
}

bool isPlainName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
      return false;
  return true;
}

bool isIdentifier(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

std::string quoteString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string localName(std::string_view name) {
  return isPlainName(name) ? "%" + std::string(name) : "%" + quoteString(name);
}

std::string globalName(std::string_view name) {
  return isPlainName(name) ? "@" + std::string(name) : "@" + quoteString(name);
}

std::string symbolicName(std::string_view name) {
  if (isIdentifier(name) && !isReservedWord(name)) return std::string(name);
  return "$" + quoteString(name);
}

}  // namespace mlcc::ir::detail
