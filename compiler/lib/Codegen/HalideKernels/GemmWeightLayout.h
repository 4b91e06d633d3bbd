//===- GemmWeightLayout.h - a GEMM weight's layouts -------------*- C++ -*-===//
//
// The weight as the GEMM reads it, from either stored layout; defined in
// GemmWeightLayout.cpp, beside the pipeline that packs it at load.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_GEMMWEIGHTLAYOUT_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_GEMMWEIGHTLAYOUT_H

#include "xf/Codegen/HalideKernels.h"

#include "Halide.h"

namespace mlir::xf {

/// Gated: the stored column of column n of the interleaved weight.
Halide::Expr storedColumn(const GemmKernelSpec &spec, Halide::Expr n);

/// The weight as W(n, k) whatever its storage, zero past column N.
Halide::Func weightByColumn(Halide::Func source, const GemmKernelSpec &spec, Halide::Expr zero,
                            const char *name);

/// Bounds of the stored weight (2-D, either layout) or of a packed one (a kernel's input,
/// or the output of the packing at load).
void constrainWeight(Halide::OutputImageParam weight, const GemmKernelSpec &spec, bool packed);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_GEMMWEIGHTLAYOUT_H
