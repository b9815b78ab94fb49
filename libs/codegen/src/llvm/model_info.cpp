// The model description `mlcc_abi_model_v1` (abi.h): inputs and outputs
// with names, dtypes and shapes, the kernels with their FLOPs per call, the
// workspace size and the entry; the symbolic dimensions and the shapes
// function of a model that has any; for a model of prim funcs without a
// graph entry, the function table with each function's own description.
// The only symbol model.o exports.
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>

#include <algorithm>

#include "llvm/entry_emitter.h"
#include "mlcc/runtime/abi.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

namespace {

// The constants of abi.h's description structs.
class ModelInfoEmitter {
 public:
  explicit ModelInfoEmitter(llvm::Module& mod) : mod_(mod), c_(mod.getContext()) {
    ptr_ = llvm::PointerType::getUnqual(c_);
    i32_ = llvm::Type::getInt32Ty(c_);
    i64_ = llvm::Type::getInt64Ty(c_);
    tensor_ty_ = llvm::StructType::create(c_, {ptr_, i32_, i32_, ptr_}, "mlcc_abi_tensor");
    kernel_ty_ = llvm::StructType::create(c_, {ptr_, llvm::Type::getDoubleTy(c_)}, "mlcc_abi_kernel");
    model_ty_ = llvm::StructType::create(
        c_, {i32_, i32_, i32_, i32_, ptr_, ptr_, ptr_, i64_, ptr_, i32_, ptr_, ptr_, i32_, ptr_, ptr_},
        "mlcc_abi_model");
    function_ty_ = llvm::StructType::create(c_, {ptr_, ptr_}, "mlcc_abi_function");
    null_ = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(c_));
  }

  // The mlcc_abi_model of a compiled plan (no functions), or (p.plan null) of
  // a model without a graph entry and with `functions`.
  llvm::Constant* model(const CompiledPlan& p, const std::vector<CompiledPlan>& functions = {}) {
    llvm::Constant* table = null_;
    if (!functions.empty()) {
      std::vector<llvm::Constant*> items;
      for (const CompiledPlan& f : functions)
        items.push_back(llvm::ConstantStruct::get(
            function_ty_, {cstring(f.plan->entry), privateGlobal(model(f), "function_model")}));
      table = array(function_ty_, items, "functions");
    }
    auto i32 = [&](size_t v) { return llvm::ConstantInt::get(i32_, static_cast<int64_t>(v)); };
    llvm::Constant* version = llvm::ConstantInt::get(i32_, MLCC_ABI_VERSION);
    if (!p.plan)
      return llvm::ConstantStruct::get(
          model_ty_, {version, i32(0), i32(0), i32(0), null_, null_, null_, llvm::ConstantInt::get(i64_, 0),
                      null_, i32(0), null_, null_, i32(functions.size()), table, null_});
    const EntryPlan& plan = *p.plan;
    llvm::Constant* kernels = null_;
    if (!plan.kernels.empty()) {
      std::vector<llvm::Constant*> items;
      for (const EntryKernel& k : plan.kernels)
        items.push_back(llvm::ConstantStruct::get(
            kernel_ty_, {cstring(k.name), llvm::ConstantFP::get(llvm::Type::getDoubleTy(c_), k.flops)}));
      kernels = array(kernel_ty_, items, "kernels");
    }
    llvm::Constant* dim_names = null_;
    if (plan.symbolic()) {
      std::vector<llvm::Constant*> names;
      for (const ir::VarNode* v : plan.dims) names.push_back(cstring(v->name));
      dim_names = array(ptr_, names, "dim_names");
    }
    return llvm::ConstantStruct::get(
        model_ty_, {version, i32(plan.inputs.size()), i32(plan.outputs.size()), i32(plan.kernels.size()),
                    tensors(plan, plan.inputs, "inputs"), tensors(plan, plan.outputs, "outputs"), kernels,
                    llvm::ConstantInt::get(i64_, plan.symbolic() ? 0 : plan.memory.workspace_bytes),
                    p.entry ? static_cast<llvm::Constant*>(p.entry) : null_, i32(plan.dims.size()), dim_names,
                    p.shapes ? static_cast<llvm::Constant*>(p.shapes) : null_, i32(functions.size()), table,
                    p.cuda ? p.cuda : null_});
  }

  llvm::StructType* modelType() const { return model_ty_; }

 private:
  llvm::Constant* privateGlobal(llvm::Constant* init, const std::string& name) {
    return new llvm::GlobalVariable(mod_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                    name);
  }
  llvm::Constant* cstring(const std::string& s) {
    return privateGlobal(llvm::ConstantDataArray::getString(c_, s), ".str");
  }
  llvm::Constant* array(llvm::Type* ty, const std::vector<llvm::Constant*>& items, const std::string& name) {
    return privateGlobal(llvm::ConstantArray::get(llvm::ArrayType::get(ty, items.size()), items), name);
  }

  llvm::Constant* tensors(const EntryPlan& plan, const std::vector<TensorDesc>& ts, const char* what) {
    if (ts.empty()) return null_;
    std::vector<llvm::Constant*> items;
    for (const TensorDesc& t : ts) {
      std::vector<uint64_t> dims(t.shape.begin(), t.shape.end());
      // Symbolic dimensions: -1 - k for dimension k of the plan, -1 for an expression.
      for (size_t d = 0; d < t.sym_shape.size(); ++d)
        if (t.shape[d] < 0) {
          auto it = std::find(plan.dims.begin(), plan.dims.end(), t.sym_shape[d]->as<ir::VarNode>());
          dims[d] = static_cast<uint64_t>(it == plan.dims.end() ? -1 : -1 - (it - plan.dims.begin()));
        }
      llvm::Constant* shape =
          dims.empty() ? null_ : privateGlobal(llvm::ConstantDataArray::get(c_, dims), "shape");
      items.push_back(llvm::ConstantStruct::get(
          tensor_ty_, {cstring(t.name), llvm::ConstantInt::get(i32_, ir::dtypeAbiCode(t.dtype)),
                       llvm::ConstantInt::get(i32_, static_cast<int64_t>(t.shape.size())), shape}));
    }
    return array(tensor_ty_, items, what);
  }

  llvm::Module& mod_;
  llvm::LLVMContext& c_;
  llvm::Type *ptr_, *i32_, *i64_;
  llvm::StructType *tensor_ty_, *kernel_ty_, *model_ty_, *function_ty_;
  llvm::Constant* null_;
};

}  // namespace

void emitModelInfo(llvm::Module& mod, const CompiledPlan& graph, const std::vector<CompiledPlan>& functions) {
  ModelInfoEmitter info(mod);
  llvm::Constant* model = info.model(graph, functions);
  auto* g = new llvm::GlobalVariable(mod, info.modelType(), true, llvm::GlobalValue::ExternalLinkage, model,
                                     "mlcc_abi_model_v1");
  g->setAlignment(llvm::Align(8));
}

}  // namespace mlcc::codegen
