// annotate-tir-op-pattern: records the op pattern kind of every prim func
// that has none as its attribute `op_pattern` (TVM's AnnotateTIROpPattern;
// tir_op_pattern.h says how it is derived), so a reader sees how fuse-ops
// will treat a call_tir of it. fuse-ops derives the same kind itself when
// the attribute is absent; a user may also write the attribute by hand.
#include "../tir_op_pattern.h"
#include "passes.h"

namespace mlcc::transform {

PassInfo makeAnnotateTirOpPatternPass() {
  PassInfo p;
  p.name = "annotate-tir-op-pattern";
  p.summary =
      "Record each prim func's op pattern kind (elementwise, ..., opaque) as its attribute op_pattern";
  p.run = [](ir::Module& m, const PassOptions&, PassContext&) -> std::string {
    int annotated = 0;
    for (auto& fn : m.functions)
      if (auto* f = std::get_if<ir::PrimFunc>(&fn); f && !f->attrs.count("op_pattern")) {
        f->attrs["op_pattern"] = ir::AttrValue(std::string(ops::patternName(derivePrimFuncPattern(*f))));
        ++annotated;
      }
    return annotated ? "annotated " + std::to_string(annotated) + " prim func(s)" : "";
  };
  return p;
}

}  // namespace mlcc::transform
