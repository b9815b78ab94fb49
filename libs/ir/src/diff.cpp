// Structural module diff and a line-based unified diff (Myers' algorithm),
// for `mlcc-inspect --diff` (see diff.h).
#include "mlcc/ir/diff.h"

#include <map>
#include <set>
#include <sstream>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"

namespace mlcc::ir {

namespace {

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur)) lines.push_back(cur);
  return lines;
}

enum class EditKind { Keep, Remove, Insert };
struct Edit {
  EditKind kind;
  size_t a_line, b_line;  // 0-based indices into a and b
};

// Myers' O((N+M)D) shortest edit script. Past `max_d` edits it gives up and
// returns "remove all of a, insert all of b", which is still a correct diff.
std::vector<Edit> editScript(const std::vector<std::string>& a, const std::vector<std::string>& b,
                             int max_d = 4000) {
  const int n = static_cast<int>(a.size()), m = static_cast<int>(b.size());
  const int offset = n + m + 1;
  std::vector<int> v(2 * offset + 1, 0);
  std::vector<std::vector<int>> history;
  int found_d = -1;
  for (int d = 0; d <= n + m && d <= max_d; ++d) {
    history.push_back(v);
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1])) ? v[offset + k + 1]
                                                                             : v[offset + k - 1] + 1;
      int y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
    if (found_d >= 0) break;
  }
  std::vector<Edit> edits;
  if (found_d < 0) {
    for (int i = 0; i < n; ++i) edits.push_back({EditKind::Remove, size_t(i), 0});
    for (int j = 0; j < m; ++j) edits.push_back({EditKind::Insert, size_t(n), size_t(j)});
    return edits;
  }
  // Walk back through the saved frontiers.
  int x = n, y = m;
  for (int d = found_d; d > 0; --d) {
    const std::vector<int>& pv = history[d];
    int k = x - y;
    bool down = (k == -d || (k != d && pv[offset + k - 1] < pv[offset + k + 1]));
    int prev_k = down ? k + 1 : k - 1;
    int prev_x = pv[offset + prev_k];
    int prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x, --y;
      edits.push_back({EditKind::Keep, size_t(x), size_t(y)});
    }
    if (down) {
      --y;
      edits.push_back({EditKind::Insert, size_t(x), size_t(y)});
    } else {
      --x;
      edits.push_back({EditKind::Remove, size_t(x), size_t(y)});
    }
  }
  while (x > 0 && y > 0) {
    --x, --y;
    edits.push_back({EditKind::Keep, size_t(x), size_t(y)});
  }
  return {edits.rbegin(), edits.rend()};
}

}  // namespace

std::string unifiedDiff(const std::string& a_text, const std::string& b_text, const std::string& name_a,
                        const std::string& name_b, int context) {
  if (a_text == b_text) return {};
  std::vector<std::string> a = splitLines(a_text), b = splitLines(b_text);
  std::vector<Edit> edits = editScript(a, b);
  std::ostringstream out;
  out << "--- " << name_a << "\n+++ " << name_b << "\n";
  size_t i = 0;
  while (i < edits.size()) {
    // Find the next change, then grow a hunk around it.
    while (i < edits.size() && edits[i].kind == EditKind::Keep) ++i;
    if (i == edits.size()) break;
    size_t start = i >= size_t(context) ? i - context : 0;
    size_t end = i;
    size_t keeps = 0;
    while (end < edits.size()) {
      keeps = edits[end].kind == EditKind::Keep ? keeps + 1 : 0;
      if (keeps > size_t(2 * context)) break;
      ++end;
    }
    end = std::min(edits.size(), end - (keeps > size_t(context) ? keeps - context : 0));
    size_t a_start = edits[start].a_line, b_start = edits[start].b_line;
    size_t a_count = 0, b_count = 0;
    for (size_t e = start; e < end; ++e) {
      if (edits[e].kind != EditKind::Insert) ++a_count;
      if (edits[e].kind != EditKind::Remove) ++b_count;
    }
    out << "@@ -" << (a_count ? a_start + 1 : a_start) << "," << a_count << " +"
        << (b_count ? b_start + 1 : b_start) << "," << b_count << " @@\n";
    for (size_t e = start; e < end; ++e) {
      switch (edits[e].kind) {
        case EditKind::Keep: out << " " << a[edits[e].a_line] << "\n"; break;
        case EditKind::Remove: out << "-" << a[edits[e].a_line] << "\n"; break;
        case EditKind::Insert: out << "+" << b[edits[e].b_line] << "\n"; break;
      }
    }
    i = end;
  }
  return out.str();
}

ModuleDiff diffModules(const Module& a, const Module& b, const std::string& name_a,
                       const std::string& name_b) {
  ModuleDiff result;
  std::ostringstream out;
  if (a.weight_files != b.weight_files) {
    result.equal = false;
    out << "weights files differ:\n";
    for (const auto& w : a.weight_files) out << "  - " << w << "\n";
    for (const auto& w : b.weight_files) out << "  + " << w << "\n";
  }
  std::string externs_a, externs_b;
  for (const auto& e : a.externs) externs_a += printExternFunc(e);
  for (const auto& e : b.externs) externs_b += printExternFunc(e);
  if (externs_a != externs_b) {
    result.equal = false;
    out << "extern declarations differ:\n" << unifiedDiff(externs_a, externs_b, name_a, name_b);
  }
  std::map<std::string, const Function*> in_b;
  for (const auto& f : b.functions) in_b[functionName(f)] = &f;
  std::set<std::string> seen;
  for (const auto& fa : a.functions) {
    const std::string& name = functionName(fa);
    seen.insert(name);
    auto it = in_b.find(name);
    if (it == in_b.end()) {
      result.equal = false;
      out << "removed @" << name << "\n";
      continue;
    }
    const Function& fb = *it->second;
    bool same = fa.index() == fb.index() && std::visit(
                                                [&](const auto& x) {
                                                  using T = std::decay_t<decltype(x)>;
                                                  return structuralEqual(x, std::get<T>(fb));
                                                },
                                                fa);
    if (same) continue;
    result.equal = false;
    out << "changed @" << name << "\n"
        << unifiedDiff(printFunction(fa), printFunction(fb), name_a + " @" + name, name_b + " @" + name);
  }
  for (const auto& fb : b.functions) {
    if (seen.count(functionName(fb))) continue;
    result.equal = false;
    out << "added @" << functionName(fb) << "\n";
  }
  if (result.equal) out << "modules are structurally equal\n";
  result.text = out.str();
  return result;
}

}  // namespace mlcc::ir
