//===- Bf16Products.h - whether --bf16-gemm-inputs runs bf16 products -*- C++ -*-===//
//
// --bf16-gemm-inputs asks for the fast prefill path; whether bf16 dot products are fast depends
// on the CPU (Zen 4/5: twice the fp32 FMA peak; an Intel Xeon without AMX: half). xfc decides
// once per run, from --bf16-products and, for `auto` on this machine, a measurement.
//
//===----------------------------------------------------------------------===//

#ifndef XFC_BF16PRODUCTS_H
#define XFC_BF16PRODUCTS_H

namespace xfc {

/// Whether the build's multi-row GEMMs take bf16 inputs and dot products: false without
/// --bf16-gemm-inputs; otherwise --bf16-products, where `auto` measures this CPU's peaks once
/// (about 0.1 s) when the target is `host`. The choice is printed once under -v.
bool useBf16Products();

} // namespace xfc

#endif // XFC_BF16PRODUCTS_H
