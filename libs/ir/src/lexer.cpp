// The IR tokenizer (see lexer.h).
#include "lexer.h"

#include <cstdio>

namespace mlcc::ir::detail {

namespace {

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }
bool isNameChar(char c) { return isIdentChar(c) || c == '.'; }
int hexValue(char c) {
  if (isDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string printableChar(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", u);
  return buf;
}

}  // namespace

std::string describeToken(const Token& t) {
  switch (t.kind) {
    case Tok::Eof: return "end of file";
    case Tok::Ident: return "identifier '" + std::string(t.text) + "'";
    case Tok::Int: return "integer " + std::string(t.text) + std::string(t.suffix);
    case Tok::Float: return "number " + std::string(t.text) + std::string(t.suffix);
    case Tok::String: return "string";
    default: {
      std::string s(t.text);
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return "'" + s + "'";
    }
  }
}

mlcc::Error errorAtPos(const std::string& file, const std::string& text, int line, int col,
                       const std::string& message) {
  return mlcc::Error(SourceLoc{file, line, col}, message, lineOf(text, line));
}

void Lexer::fail(int line, int col, const std::string& message) const {
  throw errorAtPos(file_, text_, line, col, message);
}

const Token& Lexer::peek(size_t k) {
  while (ahead_.size() <= k) ahead_.push_back(lex());
  return ahead_[k];
}

Token Lexer::next() {
  peek(0);
  Token t = std::move(ahead_.front());
  ahead_.pop_front();
  return t;
}

void Lexer::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::skipSpaceAndComments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance();
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') advance();
    } else {
      break;
    }
  }
}

std::string Lexer::lexQuoted(const char* what) {
  const int line = line_, col = col_;
  advance();  // opening quote
  std::string out;
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') fail(line, col, std::string("unterminated ") + what);
    char c = text_[pos_];
    if (c == '"') {
      advance();
      return out;
    }
    if (c != '\\') {
      out += c;
      advance();
      continue;
    }
    const int esc_line = line_, esc_col = col_;
    advance();
    char e = at(pos_);
    if (pos_ >= text_.size()) fail(line, col, std::string("unterminated ") + what);
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'x': {
        int hi = hexValue(at(pos_ + 1)), lo = hexValue(at(pos_ + 2));
        if (pos_ + 2 >= text_.size() || hi < 0 || lo < 0)
          fail(esc_line, esc_col, "invalid escape sequence: '\\x' needs two hex digits");
        out += static_cast<char>(hi * 16 + lo);
        advance();
        advance();
        break;
      }
      case '\n': fail(line, col, std::string("unterminated ") + what);
      default: fail(esc_line, esc_col, "invalid escape sequence '\\" + printableChar(e) + "'");
    }
    advance();
  }
}

void Lexer::lexName(Token& t, Tok kind, const char* what) {
  t.kind = kind;
  advance();  // sigil
  if (at(pos_) == '"' && pos_ < text_.size()) {
    t.value = lexQuoted(what);
    return;
  }
  size_t start = pos_;
  while (pos_ < text_.size() && isNameChar(text_[pos_])) advance();
  if (pos_ == start) fail(t.line, t.col, std::string("expected a name after '") + text_[t.offset] + "'");
  t.value.assign(text_, start, pos_ - start);
}

void Lexer::lexNumber(Token& t) {
  bool is_float = false;
  while (pos_ < text_.size() && isDigit(text_[pos_])) advance();
  if (at(pos_) == '.' && isDigit(at(pos_ + 1)) && pos_ + 1 < text_.size()) {
    is_float = true;
    advance();
    while (pos_ < text_.size() && isDigit(text_[pos_])) advance();
  }
  char e = at(pos_);
  if ((e == 'e' || e == 'E') && pos_ < text_.size()) {
    size_t k = pos_ + 1;
    if (at(k) == '+' || at(k) == '-') ++k;
    if (k < text_.size() && isDigit(at(k))) {
      is_float = true;
      while (pos_ < k) advance();
      while (pos_ < text_.size() && isDigit(text_[pos_])) advance();
    }
  }
  t.kind = is_float ? Tok::Float : Tok::Int;
  t.text = std::string_view(text_).substr(t.offset, pos_ - t.offset);
  if (pos_ < text_.size() && isIdentStart(text_[pos_])) {
    size_t start = pos_;
    while (pos_ < text_.size() && isIdentChar(text_[pos_])) advance();
    t.suffix = std::string_view(text_).substr(start, pos_ - start);
  }
}

Token Lexer::lex() {
  skipSpaceAndComments();
  Token t;
  t.offset = pos_;
  t.line = line_;
  t.col = col_;
  if (pos_ >= text_.size()) {
    t.kind = Tok::Eof;
    t.end = pos_;
    return t;
  }
  const char c = text_[pos_];
  auto punct = [&](Tok kind, int length) {
    t.kind = kind;
    for (int i = 0; i < length; ++i) advance();
  };
  if (isIdentStart(c)) {
    t.kind = Tok::Ident;
    while (pos_ < text_.size() && isIdentChar(text_[pos_])) advance();
  } else if (isDigit(c)) {
    lexNumber(t);
    t.end = pos_;
    return t;
  } else if (c == '"') {
    t.kind = Tok::String;
    t.value = lexQuoted("string");
  } else if (c == '%') {
    char n = at(pos_ + 1);
    if (pos_ + 1 < text_.size() && (isNameChar(n) || n == '"'))
      lexName(t, Tok::Local, "name");
    else
      punct(Tok::Percent, 1);
  } else if (c == '@') {
    lexName(t, Tok::Global, "function name");
  } else if (c == '$') {
    lexName(t, Tok::Dollar, "name");
  } else {
    const char n = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
    switch (c) {
      case '(': punct(Tok::LParen, 1); break;
      case ')': punct(Tok::RParen, 1); break;
      case '[': punct(Tok::LBracket, 1); break;
      case ']': punct(Tok::RBracket, 1); break;
      case '{': punct(Tok::LBrace, 1); break;
      case '}': punct(Tok::RBrace, 1); break;
      case ',': punct(Tok::Comma, 1); break;
      case ':': punct(Tok::Colon, 1); break;
      case '*': punct(Tok::Star, 1); break;
      case '/': punct(Tok::Slash, 1); break;
      case '=': n == '=' ? punct(Tok::Eq, 2) : punct(Tok::Assign, 1); break;
      case '!': n == '=' ? punct(Tok::Ne, 2) : punct(Tok::Bang, 1); break;
      case '<': n == '=' ? punct(Tok::Le, 2) : punct(Tok::Lt, 1); break;
      case '>': n == '=' ? punct(Tok::Ge, 2) : punct(Tok::Gt, 1); break;
      case '+': n == ':' ? punct(Tok::PlusColon, 2) : punct(Tok::Plus, 1); break;
      case '-': n == '>' ? punct(Tok::Arrow, 2) : punct(Tok::Minus, 1); break;
      case '.': n == '.' ? punct(Tok::DotDot, 2) : punct(Tok::Dot, 1); break;
      case '&':
        if (n != '&') fail(t.line, t.col, "unexpected character '&' (did you mean '&&'?)");
        punct(Tok::AndAnd, 2);
        break;
      case '|':
        if (n != '|') fail(t.line, t.col, "unexpected character '|' (did you mean '||'?)");
        punct(Tok::OrOr, 2);
        break;
      default: fail(t.line, t.col, "unexpected character '" + printableChar(c) + "'");
    }
  }
  t.end = pos_;
  t.text = std::string_view(text_).substr(t.offset, pos_ - t.offset);
  return t;
}

}  // namespace mlcc::ir::detail
