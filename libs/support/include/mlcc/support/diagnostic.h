// Diagnostics: errors that carry a source location and print as
// `FILE:LINE:COL: error: message`, followed by the source line and a caret.
// Every library reports bad input by throwing mlcc::Error; tools catch it in
// main, print it and exit 1. Nothing in mlcc aborts on bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace mlcc {

// A position in a named source. line and col are 1-based; 0 means unknown.
struct SourceLoc {
  std::string file;  // "<stdin>" for standard input; empty when unknown
  int line = 0;
  int col = 0;
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message) : std::runtime_error(message), message_(std::move(message)) {}
  Error(SourceLoc loc, std::string message, std::string source_line = {})
      : std::runtime_error(message),
        loc_(std::move(loc)),
        message_(std::move(message)),
        source_line_(std::move(source_line)) {}

  const SourceLoc& loc() const { return loc_; }
  const std::string& message() const { return message_; }
  const std::string& source_line() const { return source_line_; }

  // `FILE:LINE:COL: error: message` (or `FILE: error: message`, or
  // `error: message`), then the source line and a caret under the column
  // when the source line is known. No trailing newline.
  std::string format() const;

 private:
  SourceLoc loc_;
  std::string message_;
  std::string source_line_;
};

// Returns line `line` (1-based) of `text`, without its newline.
std::string lineOf(const std::string& text, int line);

// An error at a 0-based line and column of `text` (as YAML parsers report
// them; negative: unknown), read from `file`, with the source line.
Error errorInText(const std::string& file, const std::string& text, int line0, int col0, std::string message);

}  // namespace mlcc
