// Embedding the constants the entry uses as one aligned read-only global.
#include "mlcc/ir/weights.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>

#include <cstring>
#include <optional>

#include "llvm/entry_emitter.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

EmbeddedWeights embedWeights(llvm::Module& mod, const ir::Module& m, const EntryPlan& plan) {
  EmbeddedWeights out;
  if (plan.constants.empty()) return out;
  uint64_t size = 0;
  for (const EntryConstant& c : plan.constants) {
    out.offsets.push_back(size);
    out.bytes += c.desc.bytes;
    size += (c.desc.bytes + 63) / 64 * 64;
  }
  std::vector<char> blob(std::max<uint64_t>(size, 1), 0);
  std::optional<ir::WeightStore> store;
  for (size_t i = 0; i < plan.constants.size(); ++i) {
    const EntryConstant& c = plan.constants[i];
    if (c.inline_data) {
      std::memcpy(blob.data() + out.offsets[i], c.inline_data->data(), c.desc.bytes);
      continue;
    }
    if (!store) store = ir::WeightStore::open(m);
    ir::WeightView w = store->get(c.weight);
    if (w.dtype != c.desc.dtype || w.shape != c.desc.shape || w.data.size() != c.desc.bytes)
      throw Error("weight '" + c.weight + "' in " + std::string(w.file) + " does not match the type of %" +
                  c.desc.name);
    std::memcpy(blob.data() + out.offsets[i], w.data.data(), c.desc.bytes);
  }
  llvm::Constant* init = llvm::ConstantDataArray::getRaw(
      llvm::StringRef(blob.data(), blob.size()), blob.size(), llvm::Type::getInt8Ty(mod.getContext()));
  out.global = new llvm::GlobalVariable(mod, init->getType(), /*isConstant=*/true,
                                        llvm::GlobalValue::InternalLinkage, init, "mlcc_weights");
  out.global->setAlignment(llvm::Align(64));
  out.global->setSection(".rodata.mlcc_weights");
  return out;
}

}  // namespace mlcc::codegen
