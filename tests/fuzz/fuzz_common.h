// Shared by the libFuzzer targets of tests/fuzz: what counts as an expected
// outcome, and a scratch file for loaders that read paths.
//
// A fuzz input may be rejected with mlcc::Error (the project's diagnostic
// exception): that is the documented outcome for bad input. Any other
// exception escaping a library (std::out_of_range from a std::stoi, a
// YAML::Exception, a JSON parse error, ...) would reach the tools' generic
// `error: what()` handler without a location, so it counts as a finding: the
// target prints it and aborts. Crashes, sanitizer reports, hangs (-timeout)
// and out-of-memory (-rss_limit_mb, -malloc_limit_mb) are reported by
// libFuzzer itself.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "mlcc/support/diagnostic.h"

namespace mlcc::fuzz {

// Runs `body`; an mlcc::Error is expected, any other exception aborts.
template <typename F>
void expectErrorsOnly(F&& body) {
  try {
    body();
  } catch (const mlcc::Error&) {
    // The documented outcome for bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception other than mlcc::Error escaped: %s\n", e.what());
    std::abort();
  }
}

// A failed property of an accepted input (e.g. a round trip that differs).
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::abort();
}

// The small graph (dense + bias + relu, conv2d + relu) that the passes and
// schedule targets transform: tests/cli/lib/dense_conv.ir, read once.
inline const std::string& denseConvGraph() {
  static const std::string text = [] {
    std::ifstream in(MLCC_DENSE_CONV_IR);
    if (!in) fail(std::string("cannot read ") + MLCC_DENSE_CONV_IR);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  return text;
}

// A private scratch directory (under $TMPDIR, else /tmp) for the process,
// removed at exit; created on first use. (The string is never destroyed: the
// exit handler that removes the directory runs after static destructors.)
inline const std::string& scratchDir() {
  static const std::string& dir = *[] {
    const char* tmp = std::getenv("TMPDIR");
    auto* pattern = new std::string(std::string(tmp && *tmp ? tmp : "/tmp") + "/mlcc-fuzz-XXXXXX");
    if (!mkdtemp(pattern->data())) fail("cannot create a scratch directory");
    std::atexit([] { std::system(("rm -rf '" + scratchDir() + "'").c_str()); });
    return pattern;
  }();
  return dir;
}

// Writes `data` to scratchDir()/name and returns the path.
inline std::string writeScratch(const std::string& name, const uint8_t* data, size_t size) {
  std::string path = scratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) fail("cannot write " + path);
  return path;
}

inline std::string asString(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace mlcc::fuzz
