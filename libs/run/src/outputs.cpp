// Writing or summarizing a run's outputs (see outputs.h).
#include "outputs.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "mlcc/ir/tensor_npy.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::run {

namespace {

// A file name for an output: characters outside [A-Za-z0-9_.-] become '_'.
std::string sanitize(const std::string& name) {
  std::string r;
  for (char c : name)
    r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  if (r.empty() || r == "." || r == "..") r = "_" + r;
  return r;
}

// One line: name, type, the first values, mean and largest magnitude.
std::string summary(const interp::NamedTensor& o) {
  const auto& t = o.tensor;
  std::string s = o.name + ": " + std::string(ir::dtypeName(t.dtype())) + "[";
  for (int i = 0; i < t.rank(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  s += "]";
  const int64_t n = t.numel();
  s += " = [";
  char buf[64];
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.6g", i ? ", " : "", t.at(i));
    s += buf;
  }
  s += n > 6 ? ", ...]" : "]";
  double sum = 0, amax = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.at(i);
    sum += v;
    amax = std::max(amax, std::fabs(v));
  }
  std::snprintf(buf, sizeof buf, "  mean=%.6g absmax=%.6g", n ? sum / static_cast<double>(n) : 0.0, amax);
  return s + buf;
}

}  // namespace

void emitOutputs(const std::vector<interp::NamedTensor>& outs, const std::string& out_dir, bool quiet,
                 bool verbose) {
  if (!out_dir.empty()) {
    std::map<std::string, std::string> owner;  // file name -> output name
    for (const auto& o : outs) {
      const std::string file = sanitize(o.name) + ".npy";
      if (auto [it, fresh] = owner.emplace(file, o.name); !fresh)
        throw Error(SourceLoc{"--output-dir", 0, 0},
                    "outputs '" + it->second + "' and '" + o.name + "' would both be written to " +
                        (std::filesystem::path(out_dir) / file).string() +
                        " (characters outside [A-Za-z0-9_.-] become '_'); nothing was written");
    }
    std::filesystem::create_directories(out_dir);
    AtomicFileSet files;
    std::vector<std::string> paths;
    for (const auto& o : outs) {
      paths.push_back((std::filesystem::path(out_dir) / (sanitize(o.name) + ".npy")).string());
      ir::writeNpyTensor(files.add(paths.back()), o.tensor);  // bf16 (no numpy dtype) as f32
    }
    files.commit();
    if (verbose)
      for (const auto& p : paths) std::cerr << "wrote " << p << "\n";
  } else if (!quiet) {
    for (const auto& o : outs) std::cout << summary(o) << "\n";
  }
}

}  // namespace mlcc::run
