// Blocks that tensorize marked (attribute tensor_intrin = "NAME"): instead
// of their loop nest, one call of the user's routine
//   void NAME(const mlcc_extern_region* args, int32_t num_args)
// (include/mlcc/extern.h) on their regions, the reads then the one write:
// each a pointer to the tile's corner, the tile's constant shape and the
// buffer's row-major strides in elements. The region array and the strides
// live on the kernel's stack. mlcc-link resolves NAME from the user's library
// (--lib). With bounds checks, the first and last element of each tile are
// checked, and the call is skipped when one is outside its buffer.
#include "llvm/emitter.h"
#include "mlcc/ir/dtype.h"

namespace mlcc::codegen {

void KernelEmitter::tensorIntrinCall(const ir::BlockNode& blk, const std::string& name) {
  if (!blk.iter_vars.empty() || blk.predicate || blk.init || !blk.alloc_buffers.empty() ||
      blk.writes.size() != 1)
    fail("calls tensor intrinsic \"" + name +
         "\" but is not a block tensorize made (opaque, one write region)");
  std::vector<ir::BufferRegion> regions = blk.reads;
  regions.push_back(blk.writes[0]);

  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Type* ptr = b.getPtrTy();
  llvm::StructType* region_ty = llvm::StructType::get(ctx, {ptr, ptr, ptr, i32, i32});
  llvm::IRBuilder<> eb(entry, entry->getFirstInsertionPt());
  llvm::Value* arr =
      eb.CreateAlloca(llvm::ArrayType::get(region_ty, regions.size()), nullptr, name + ".args");

  std::vector<llvm::BasicBlock*> checks;  // bounds-check joins, innermost last
  for (size_t i = 0; i < regions.size(); ++i) {
    const ir::BufferRegion& r = regions[i];
    const ir::Buffer& buf = r.buffer;
    const BufferBinding& bb = buffers.at(buf.get());
    if (!bb.base) fail("buffer %" + buf->name + " is used outside of its block");
    const size_t nd = r.region.size();
    std::vector<llvm::Value*> shape, corner, last;
    std::vector<llvm::Constant*> tile;
    for (size_t d = 0; d < nd; ++d) {
      int64_t extent;
      if (!ir::asConstInt(r.region[d].extent, &extent))
        fail("the tile of %" + buf->name + " for " + name + " has a symbolic extent");
      shape.push_back(cast(expr(buf->shape[d]), buf->shape[d]->dtype, ir::DType::i64));
      llvm::Value* m = cast(expr(r.region[d].min), r.region[d].min->dtype, ir::DType::i64);
      corner.push_back(m);
      last.push_back(b.CreateAdd(m, b.getInt64(extent - 1)));
      tile.push_back(b.getInt64(extent));
    }
    for (auto* at : {&corner, &last})
      if (llvm::BasicBlock* done = checkBounds(buf, *at, shape, "tile of")) checks.push_back(done);
    // Row-major strides and the corner's offset, in elements.
    llvm::Type* dims_ty = llvm::ArrayType::get(i64, nd == 0 ? 1 : nd);
    llvm::Value* strides = eb.CreateAlloca(dims_ty, nullptr, name + ".strides." + buf->name);
    llvm::Value* stride = b.getInt64(1);
    llvm::Value* offset = b.getInt64(0);
    for (size_t d = nd; d-- > 0;) {
      b.CreateStore(stride, b.CreateConstInBoundsGEP2_64(dims_ty, strides, 0, d));
      offset = b.CreateAdd(offset, b.CreateMul(corner[d], stride));
      stride = b.CreateMul(stride, shape[d]);
    }
    auto* tile_shape = new llvm::GlobalVariable(
        mod, dims_ty, true, llvm::GlobalValue::PrivateLinkage,
        nd == 0 ? llvm::ConstantArray::get(llvm::cast<llvm::ArrayType>(dims_ty), {b.getInt64(1)})
                : llvm::ConstantArray::get(llvm::cast<llvm::ArrayType>(dims_ty), tile),
        symbol + "." + name + ".shape");
    llvm::Value* data = b.CreateInBoundsGEP(b.getInt8Ty(), bb.base,
                                            b.CreateMul(offset, b.getInt64(ir::dtypeBytes(buf->dtype))));
    llvm::Value* elem =
        b.CreateConstInBoundsGEP2_64(llvm::ArrayType::get(region_ty, regions.size()), arr, 0, i);
    b.CreateStore(data, b.CreateStructGEP(region_ty, elem, 0));
    b.CreateStore(tile_shape, b.CreateStructGEP(region_ty, elem, 1));
    b.CreateStore(strides, b.CreateStructGEP(region_ty, elem, 2));
    b.CreateStore(b.getInt32(static_cast<int32_t>(nd)), b.CreateStructGEP(region_ty, elem, 3));
    b.CreateStore(b.getInt32(ir::dtypeAbiCode(buf->dtype)), b.CreateStructGEP(region_ty, elem, 4));
  }
  llvm::FunctionCallee fn_decl =
      mod.getOrInsertFunction(name, llvm::FunctionType::get(b.getVoidTy(), {ptr, i32}, false));
  b.CreateCall(fn_decl, {arr, b.getInt32(static_cast<int32_t>(regions.size()))});
  for (size_t k = checks.size(); k-- > 0;) {
    b.CreateBr(checks[k]);
    b.SetInsertPoint(checks[k]);
  }
}

}  // namespace mlcc::codegen
