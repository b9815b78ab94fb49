// Formatting of mlcc::Error (see diagnostic.h).
#include "mlcc/support/diagnostic.h"

namespace mlcc {

std::string Error::format() const {
  std::string out;
  if (!loc_.file.empty()) {
    out += loc_.file;
    if (loc_.line > 0) {
      out += ":" + std::to_string(loc_.line);
      if (loc_.col > 0) out += ":" + std::to_string(loc_.col);
    }
    out += ": ";
  }
  out += "error: " + message_;
  if (!source_line_.empty() && loc_.col > 0) {
    out += "\n" + source_line_ + "\n";
    // Keep tabs so the caret lines up under the same column in a terminal.
    for (int i = 1; i < loc_.col && i - 1 < static_cast<int>(source_line_.size()); ++i)
      out += source_line_[i - 1] == '\t' ? '\t' : ' ';
    out += "^";
  }
  return out;
}

std::string lineOf(const std::string& text, int line) {
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return {};
    ++pos;
  }
  size_t end = text.find('\n', pos);
  std::string result = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  if (!result.empty() && result.back() == '\r') result.pop_back();
  return result;
}

Error errorInText(const std::string& file, const std::string& text, int line0, int col0,
                  std::string message) {
  const int line = line0 >= 0 ? line0 + 1 : 0;
  const int col = col0 >= 0 ? col0 + 1 : 0;
  return Error(SourceLoc{file, line, col}, std::move(message), line > 0 ? lineOf(text, line) : "");
}

}  // namespace mlcc
