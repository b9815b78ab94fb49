// f16 and bf16 in generated code: values are computed as float and rounded
// to nearest-even after each operation; in memory they are 16-bit patterns.
// Conversions match mlcc::ir::detail (float_bits.h): NaN becomes the
// positive canonical quiet NaN, overflow becomes inf. f16 uses LLVM's half
// conversions (F16C on x86); bf16 is integer arithmetic on the bits.
#include "llvm/emitter.h"

namespace mlcc::codegen {

llvm::Value* KernelEmitter::f16BitsToFloat(llvm::Value* bits) {
  return b.CreateFPExt(b.CreateBitCast(bits, b.getHalfTy()), b.getFloatTy());
}

llvm::Value* KernelEmitter::bf16BitsToFloat(llvm::Value* bits) {
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), 16), b.getFloatTy());
}

llvm::Value* KernelEmitter::floatToF16Bits(llvm::Value* v) {
  llvm::Value* bits = b.CreateBitCast(b.CreateFPTrunc(v, b.getHalfTy()), b.getInt16Ty());
  return b.CreateSelect(b.CreateFCmpUNO(v, v), b.getInt16(0x7E00), bits);
}

llvm::Value* KernelEmitter::floatToBF16Bits(llvm::Value* v) {
  llvm::Value* x = b.CreateBitCast(v, b.getInt32Ty());
  llvm::Value* lsb = b.CreateAnd(b.CreateLShr(x, 16), 1);
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(x, b.getInt32(0x7FFF)), lsb), 16);
  llvm::Value* bits = b.CreateTrunc(rounded, b.getInt16Ty());
  return b.CreateSelect(b.CreateFCmpUNO(v, v), b.getInt16(0x7FC0), bits);
}

llvm::Value* KernelEmitter::roundFloat(llvm::Value* v, ir::DType t) {
  if (t == ir::DType::f16) return f16BitsToFloat(floatToF16Bits(v));
  if (t == ir::DType::bf16) return bf16BitsToFloat(floatToBF16Bits(v));
  return v;
}

// Rounding a double to float with round-to-odd, then to bf16 with
// round-to-nearest-even, rounds the double once (float keeps more than two
// extra bits).
llvm::Value* KernelEmitter::doubleToBF16(llvm::Value* d) {
  llvm::Value* f = b.CreateFPTrunc(d, b.getFloatTy());
  llvm::Value* back = b.CreateFPExt(f, b.getDoubleTy());
  llvm::Value* fbits = b.CreateBitCast(f, b.getInt32Ty());
  // Rounded away from zero: step back towards zero; then mark inexact.
  llvm::Value* away = b.CreateFCmpOGT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                      b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  llvm::Value* toward = b.CreateSelect(away, b.CreateSub(fbits, b.getInt32(1)), fbits);
  llvm::Value* inexact = b.CreateFCmpONE(back, d);
  llvm::Value* odd = b.CreateSelect(inexact, b.CreateOr(toward, 1), fbits);
  return roundFloat(b.CreateBitCast(odd, b.getFloatTy()), ir::DType::bf16);
}

}  // namespace mlcc::codegen
