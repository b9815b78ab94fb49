// The tokenizer of the IR text format (artifacts_schema/ir-grammar.md).
// Internal to libs/ir: the parser pulls tokens one at a time, with
// arbitrary lookahead. Lexical errors throw mlcc::Error with the location.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "mlcc/support/diagnostic.h"

namespace mlcc::ir::detail {

enum class Tok : uint8_t {
  Eof,
  Ident,   // keywords, op names, dtypes, symbolic variables
  Local,   // %name or %"name"  (value: the name)
  Global,  // @name or @"name"
  Dollar,  // $name or $"name"  (a symbolic variable)
  Int,     // digits (text), with an optional dtype suffix
  Float,   // digits with '.' or exponent (text), with an optional suffix
  String,  // "..." (value: the decoded contents)
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Assign,     // =
  Eq,         // ==
  Ne,         // !=
  Lt,         // <
  Le,         // <=
  Gt,         // >
  Ge,         // >=
  Plus,       // +
  PlusColon,  // +:
  Minus,      // -
  Star,       // *
  Slash,      // /
  Percent,    // % (not followed by a name)
  AndAnd,     // &&
  OrOr,       // ||
  Bang,       // !
  Arrow,      // ->
  DotDot,     // ..
  Dot,        // .
};

struct Token {
  Tok kind = Tok::Eof;
  std::string_view text;    // the raw spelling (numbers: without the suffix)
  std::string_view suffix;  // Int/Float: the dtype suffix, if any
  std::string value;        // Local/Global/Dollar: the name; String: decoded
  size_t offset = 0;        // byte offset of the first character
  size_t end = 0;           // byte offset after the last character
  int line = 1;
  int col = 1;
};

// A short description of a token for messages: "'{'", "identifier 'foo'", "end of file".
std::string describeToken(const Token& t);

// An Error at (line, col) of `text`, showing that source line.
mlcc::Error errorAtPos(const std::string& file, const std::string& text, int line, int col,
                       const std::string& message);

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  // The token `k` positions ahead (0: the next one).
  const Token& peek(size_t k = 0);
  Token next();

 private:
  Token lex();
  void skipSpaceAndComments();
  void lexNumber(Token& t);
  std::string lexQuoted(const char* what);  // at the opening quote
  void lexName(Token& t, Tok kind, const char* what);
  [[noreturn]] void fail(int line, int col, const std::string& message) const;
  char at(size_t i) const { return i < text_.size() ? text_[i] : '\0'; }
  void advance();

  const std::string& text_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  std::deque<Token> ahead_;
};

}  // namespace mlcc::ir::detail
