// The registry of tensor intrinsics (see tensor_intrin.h): loading their
// descriptions from IR files and declaring the ones a module calls.
#include "mlcc/schedule/tensor_intrin.h"

#include <filesystem>
#include <map>
#include <mutex>

#include "loops.h"
#include "mlcc/ir/graph.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "tree.h"

namespace mlcc::schedule {

namespace fs = std::filesystem;
using namespace ir;

namespace {

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, TensorIntrin>& registry() {
  static std::map<std::string, TensorIntrin> r;
  return r;
}

// Why `f` cannot describe a tensor intrinsic, or "".
std::string descriptionError(const PrimFunc& f) {
  std::string why;
  auto nest = perfectNest(f.body, &why);
  if (!nest) return why;
  if (f.params.size() < 2) return "it needs at least one input and one output parameter";
  if (!f.allocs.empty()) return "it allocates buffers; a description computes on its parameters only";
  if (nest->store->buffer != f.params.back())
    return "its store is to %" + nest->store->buffer->name + ", not to its last parameter (the output %" +
           f.params.back()->name + ")";
  if (nest->block->init) return "its block has an init part (describe the update only)";
  if (nest->block->predicate) return "its block has a predicate";
  for (const auto& p : f.params)
    for (const auto& d : p->shape)
      if (!d->as<IntImmNode>()) return "parameter %" + p->name + " has a symbolic shape; tiles are constant";
  for (const ForNode* l : nest->loops)
    if (!l->extent->as<IntImmNode>()) return "loop %" + l->loop_var->name + " has a symbolic extent";
  return {};
}

}  // namespace

std::vector<std::string> loadTensorIntrinsics(const std::string& path) {
  SourceMap source_map;
  Module m = parseModuleFile(path, &source_map);
  std::vector<std::string> names;
  for (const auto& fn : m.functions) {
    const auto* f = std::get_if<PrimFunc>(&fn);
    if (!f) throw Error(SourceLoc{path, 0, 0}, "an intrinsics file holds prim funcs only (descriptions)");
    verifyPrimFunc(*f, &source_map);
    auto fail = [&](const std::string& why) {
      throw source_map.errorAt(f, "tensor intrinsic @" + f->name + ": " + why);
    };
    if (std::string why = descriptionError(*f); !why.empty()) fail(why);
    auto lib = f->attrs.find("library");
    if (lib == f->attrs.end() || !lib->second.isString())
      fail("needs attrs(library = \"FILE\"): the library that defines " + f->name);
    TensorIntrin intrin{
        *f, fs::absolute(resolvePath(directoryOf(path), lib->second.asString())).lexically_normal().string()};
    intrin.desc.trace = {};
    std::lock_guard<std::mutex> lock(registryMutex());
    auto [it, added] = registry().emplace(f->name, intrin);
    if (!added && (!structuralEqual(it->second.desc, intrin.desc) || it->second.library != intrin.library))
      fail("registered before with another description or library");
    names.push_back(f->name);
  }
  return names;
}

const TensorIntrin* findTensorIntrin(const std::string& name) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> tensorIntrinNames() {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<std::string> names;
  for (const auto& [name, _] : registry()) names.push_back(name);
  return names;
}

std::vector<ExternFunc> tensorIntrinDecls(const PrimFunc& f) {
  std::vector<ExternFunc> decls;
  if (!f.body) return decls;
  forEachBlock(f.body, [&](const BlockNode& b, const StmtPath&) {
    auto it = b.attrs.find("tensor_intrin");
    if (it == b.attrs.end() || !it->second.isString()) return;
    const std::string& name = it->second.asString();
    for (const auto& d : decls)
      if (d.name == name) return;
    const TensorIntrin* intrin = findTensorIntrin(name);
    if (!intrin)
      throw Error("prim func @" + f.name + ", block \"" + b.name + "\" calls tensor intrinsic \"" + name +
                  "\", which is not loaded (mlcc-schedule --intrinsics FILE)");
    ExternFunc d;
    d.name = d.symbol = name;
    d.library = intrin->library;
    d.tensor_intrin = true;
    const auto& params = intrin->desc.params;
    for (size_t i = 0; i + 1 < params.size(); ++i)
      d.params.push_back(makeGraphVar(params[i]->name, Type::tensor(params[i]->dtype, params[i]->shape)));
    d.ret_type = Type::tensor(params.back()->dtype, params.back()->shape);
    decls.push_back(std::move(d));
  });
  return decls;
}

void declareTensorIntrinsics(Module& m) {
  for (const auto& fn : m.functions) {
    const auto* f = std::get_if<PrimFunc>(&fn);
    if (!f) continue;
    for (auto& d : tensorIntrinDecls(*f)) {
      if (const ExternFunc* prior = m.findExtern(d.name)) {
        if (printExternFunc(*prior) != printExternFunc(d))
          throw Error("extern \"" + d.name + "\" is declared in the module as\n  " + printExternFunc(*prior) +
                      "but the loaded tensor intrinsic is\n  " + printExternFunc(d));
        continue;
      }
      m.externs.push_back(std::move(d));
    }
  }
}

}  // namespace mlcc::schedule
