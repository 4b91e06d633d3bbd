//===- Bf16Products.h - whether --bf16-gemm-inputs runs bf16 products -*- C++ -*-===//
//
// --bf16-gemm-inputs asks for the fast prefill path; whether bf16 products are fast depends
// on the CPU (vdpbf16ps on Zen 4/5: twice the fp32 FMA peak; an Intel Xeon without AMX: half;
// AMX bf16 tiles, where the OS grants them, several times fp32). xfc decides once per run,
// from --bf16-products and, for `auto` on this machine, a measurement: bf16 inputs where the
// AMX tile peak or the vdpbf16ps peak beats fp32 FMA by kBf16ProductMargin.
//
//===----------------------------------------------------------------------===//

#ifndef XFC_BF16PRODUCTS_H
#define XFC_BF16PRODUCTS_H

namespace xfc {

/// Whether the build's multi-row GEMMs take bf16 inputs and dot products: false without
/// --bf16-gemm-inputs; otherwise --bf16-products, where `auto` measures this CPU's peaks once
/// (about 0.1 s; AMX's too where usable) when the target is `host`. The choice is printed once
/// under -v.
bool useBf16Products();

} // namespace xfc

#endif // XFC_BF16PRODUCTS_H
