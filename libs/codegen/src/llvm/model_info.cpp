// The model description `mlcc_abi_model_v1` (abi.h): inputs and outputs
// with names, dtypes and shapes, the kernels with their FLOPs per call, the
// workspace size and the entry; the symbolic dimensions and the shapes
// function of a model that has any. The only symbol model.o exports.
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>

#include <algorithm>

#include "llvm/entry_emitter.h"
#include "mlcc/runtime/abi.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

namespace {

int32_t abiDType(ir::DType t) {
  switch (t) {
    case ir::DType::f32: return 0;  // MLCC_F32 ... (include/mlcc/runtime.h)
    case ir::DType::f16: return 1;
    case ir::DType::bf16: return 2;
    case ir::DType::i8: return 3;
    case ir::DType::i32: return 4;
    case ir::DType::i64: return 5;
    case ir::DType::boolean: return 6;
  }
  throw Error("unknown dtype");
}

// A private constant global holding `init`.
llvm::Constant* privateGlobal(llvm::Module& mod, llvm::Constant* init, const std::string& name) {
  return new llvm::GlobalVariable(mod, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, name);
}

llvm::Constant* cstring(llvm::Module& mod, const std::string& s) {
  return privateGlobal(mod, llvm::ConstantDataArray::getString(mod.getContext(), s), ".str");
}

}  // namespace

void emitModelInfo(llvm::Module& mod, const EntryPlan& plan, llvm::Function* entry, llvm::Function* shapes) {
  llvm::LLVMContext& c = mod.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(c);
  llvm::Type* i32 = llvm::Type::getInt32Ty(c);
  llvm::Type* i64 = llvm::Type::getInt64Ty(c);
  llvm::Type* f64 = llvm::Type::getDoubleTy(c);
  auto* tensor_ty = llvm::StructType::create(c, {ptr, i32, i32, ptr}, "mlcc_abi_tensor");
  auto* kernel_ty = llvm::StructType::create(c, {ptr, f64}, "mlcc_abi_kernel");
  auto* model_ty = llvm::StructType::create(c, {i32, i32, i32, i32, ptr, ptr, ptr, i64, ptr, i32, ptr, ptr},
                                            "mlcc_abi_model");
  llvm::Constant* null = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(c));

  auto tensors = [&](const std::vector<TensorDesc>& ts, const char* what) -> llvm::Constant* {
    if (ts.empty()) return llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(c));
    std::vector<llvm::Constant*> items;
    for (const TensorDesc& t : ts) {
      std::vector<uint64_t> dims(t.shape.begin(), t.shape.end());
      // Symbolic dimensions: -1 - k for dimension k of the plan, -1 for an expression.
      for (size_t d = 0; d < t.sym_shape.size(); ++d)
        if (t.shape[d] < 0) {
          auto it = std::find(plan.dims.begin(), plan.dims.end(), t.sym_shape[d]->as<ir::VarNode>());
          dims[d] = static_cast<uint64_t>(it == plan.dims.end() ? -1 : -1 - (it - plan.dims.begin()));
        }
      llvm::Constant* shape = dims.empty()
                                  ? llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(c))
                                  : privateGlobal(mod, llvm::ConstantDataArray::get(c, dims), "shape");
      items.push_back(llvm::ConstantStruct::get(
          tensor_ty, {cstring(mod, t.name), llvm::ConstantInt::get(i32, abiDType(t.dtype)),
                      llvm::ConstantInt::get(i32, static_cast<int64_t>(t.shape.size())), shape}));
    }
    return privateGlobal(mod, llvm::ConstantArray::get(llvm::ArrayType::get(tensor_ty, items.size()), items),
                         what);
  };
  llvm::Constant* kernels = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(c));
  if (!plan.kernels.empty()) {
    std::vector<llvm::Constant*> items;
    for (const EntryKernel& k : plan.kernels)
      items.push_back(
          llvm::ConstantStruct::get(kernel_ty, {cstring(mod, k.name), llvm::ConstantFP::get(f64, k.flops)}));
    kernels = privateGlobal(
        mod, llvm::ConstantArray::get(llvm::ArrayType::get(kernel_ty, items.size()), items), "kernels");
  }
  llvm::Constant* dim_names = null;
  if (plan.symbolic()) {
    std::vector<llvm::Constant*> names;
    for (const ir::VarNode* v : plan.dims) names.push_back(cstring(mod, v->name));
    dim_names = privateGlobal(mod, llvm::ConstantArray::get(llvm::ArrayType::get(ptr, names.size()), names),
                              "dim_names");
  }
  llvm::Constant* model = llvm::ConstantStruct::get(
      model_ty, {llvm::ConstantInt::get(i32, MLCC_ABI_VERSION),
                 llvm::ConstantInt::get(i32, static_cast<int64_t>(plan.inputs.size())),
                 llvm::ConstantInt::get(i32, static_cast<int64_t>(plan.outputs.size())),
                 llvm::ConstantInt::get(i32, static_cast<int64_t>(plan.kernels.size())),
                 tensors(plan.inputs, "inputs"), tensors(plan.outputs, "outputs"), kernels,
                 llvm::ConstantInt::get(i64, plan.symbolic() ? 0 : plan.memory.workspace_bytes), entry,
                 llvm::ConstantInt::get(i32, static_cast<int64_t>(plan.dims.size())), dim_names,
                 shapes ? static_cast<llvm::Constant*>(shapes) : null});
  auto* g = new llvm::GlobalVariable(mod, model_ty, true, llvm::GlobalValue::ExternalLinkage, model,
                                     "mlcc_abi_model_v1");
  g->setAlignment(llvm::Align(8));
}

}  // namespace mlcc::codegen
