//===- XfKernelAttrs.td - kernel descriptions ----------------*- tablegen -*-===//
//
// One attribute per Halide kernel that says everything its object depends
// on: shapes, weight layout and storage, epilogue and schedules. It is the
// kernel's one description: the generators' spec (KernelSpecs.h) is decoded
// from it, and the object-cache key, the tuning database's kernel key, the
// tune worker's request and the lowering's deduplication of kernels are all
// derived from it. Its name (the exported symbol) is not part of it.
//
//===----------------------------------------------------------------------===//

#ifndef XF_KERNEL_ATTRS_TD
#define XF_KERNEL_ATTRS_TD

include "xf/IR/XfAttrs.td"
include "xf/IR/XfScheduleAttrs.td"
include "mlir/IR/EnumAttr.td"

/// A nested attribute printed whole (`#xf.gemm_schedule<...>`), so the
/// kernel's text reads as the op's schedule attribute does.
class Xf_NestedAttrParameter<string attr, string desc> : AttrParameter<attr, desc> {
  let printer = "$_printer.printAttribute($_self)";
}

class Xf_OptionalNestedAttrParameter<string attr, string desc>
    : OptionalParameter<attr, desc> {
  let printer = "$_printer.printAttribute($_self)";
}

/// An enum parameter left out of the text at its default value.
class Xf_DefaultEnumParameter<EnumInfo enumInfo, string value> : EnumParameter<enumInfo> {
  let defaultValue = enumInfo.cppNamespace # "::" # enumInfo.className # "::" # value;
}

/// A float64 constant of the kernel, printed so that it reads back bit for bit.
class Xf_F64Parameter<string desc, string value>
    : DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(" # value # ")", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    ::llvm::APFloat v(0.0);
    if ($_parser.parseFloat(::llvm::APFloat::IEEEdouble(), v))
      return ::mlir::failure();
    return v;
  }() }];
  let printer = "$_printer.printFloat($_self)";
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
}

def Xf_GemmKernelAttr : Xf_Attr<"GemmKernel", "gemm_kernel"> {
  let summary = "a fused GEMM kernel: out = act(x·W + b) + residual";
  let description = [{
    x is [M, `k`] (M known at run time), out [M, `n`]. The weight is [K, N]
    (`weight = kn`) or [N, K] (`nk`), stored as `storage` (f32, bf16 widened
    exactly, or ggml blocks q8_0/q4_0/q4_1 along K, which need `nk` and K a
    multiple of 32); `packed`: it arrives packed at load in the register
    tiles' layout (needs `schedule`'s pack_weights and no blocks);
    `bf16_inputs`: the GEMM path rounds x to bfloat16 (bf16 storage only).
    `activation = swiglu` reads 2·N weight columns [gate | up]. `schedule`
    is the CPU schedule; `gpu_schedule` the CUDA one, absent where it is the
    generator's default. `norm` (CUDA: xf-fuse-norm-into-gemm) normalises x's
    rows as they are read, layer_norm or rms_norm with `norm_epsilon`, and γ
    (`norm_gamma`) and β (`norm_beta`) as inputs after the residual.
    `merge_heads` / `merge_ranges` (CUDA, weight = kn): with at most 4 rows x is
    merged from flash-decoding's key-range partials of that many heads and
    ranges (an input after the norm's) instead of read.
    Parameters at their default value are not printed.

    ```mlir
    #xf.gemm_kernel<k = 768, n = 2304, weight = kn, bias = true,
                    activation = gelu_tanh, schedule = #xf.gemm_schedule<...>>
    ```
  }];
  let parameters = (ins "int64_t":$k, "int64_t":$n, EnumParameter<Xf_WeightLayout>:$weight,
      Xf_DefaultEnumParameter<Xf_WeightStorage, "f32">:$storage,
      DefaultValuedParameter<"bool", "false">:$bf16_inputs,
      DefaultValuedParameter<"bool", "false">:$packed,
      DefaultValuedParameter<"bool", "false">:$bias,
      DefaultValuedParameter<"bool", "false">:$residual,
      Xf_DefaultEnumParameter<Xf_Activation, "none">:$activation,
      Xf_NestedAttrParameter<"GemmScheduleAttr", "CPU schedule">:$schedule,
      Xf_OptionalNestedAttrParameter<"GpuGemmScheduleAttr", "CUDA schedule">:$gpu_schedule,
      OptionalParameter<"std::optional<::mlir::xf::GemmNorm>", "norm prologue">:$norm,
      Xf_F64Parameter<"norm epsilon", "0.0">:$norm_epsilon,
      DefaultValuedParameter<"bool", "false">:$norm_gamma,
      DefaultValuedParameter<"bool", "false">:$norm_beta,
      DefaultValuedParameter<"int64_t", "0">:$merge_heads,
      DefaultValuedParameter<"int64_t", "0">:$merge_ranges);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Xf_AttentionKernelAttr : Xf_Attr<"AttentionKernel", "attention_kernel"> {
  let summary = "a flash-style multi-head attention kernel";
  let description = [{
    q is [M, heads·dk], out [M, heads·dv]; K and V have `kv_heads` heads
    (query head h reads K/V head h / (heads / kv_heads)). `causal`: query t
    sees keys t' ≤ t + (Mz − M); `scale` multiplies the scores. `rope`
    rotates Q (and K unless `rope_keys = false`: a cache of rotated keys)
    with base `rope_base`. `batched_decode` also exports one decode step of
    several sequences on their own caches; `half_key_values` reads K and V
    as float16; `segmented` takes a packed batch in one call; `gpu_schedule`
    is the CUDA kernels' schedule (absent: the defaults). Parameters at
    their default value are not printed.

    ```mlir
    #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 64, dv = 64, causal = true,
                         scale = 1.250000e-01, schedule = #xf.attention_schedule<...>>
    ```
  }];
  let parameters = (ins "int64_t":$heads, "int64_t":$kv_heads, "int64_t":$dk, "int64_t":$dv,
      DefaultValuedParameter<"bool", "false">:$causal,
      Xf_F64Parameter<"score scale", "1.0">:$scale,
      OptionalParameter<"std::optional<::mlir::xf::RopePairing>", "rotary pairs">:$rope,
      Xf_F64Parameter<"rotary base", "10000.0">:$rope_base,
      DefaultValuedParameter<"bool", "true">:$rope_keys,
      DefaultValuedParameter<"bool", "false">:$batched_decode,
      DefaultValuedParameter<"bool", "false">:$half_key_values,
      DefaultValuedParameter<"bool", "false">:$segmented,
      Xf_NestedAttrParameter<"AttentionScheduleAttr", "schedule">:$schedule,
      Xf_OptionalNestedAttrParameter<"GpuAttentionScheduleAttr", "CUDA schedule">:$gpu_schedule);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

// How a weight is kept, as the discardable attribute `xf.weight_storage` on
// the xf.parameter that binds it (bf16, blocks) or the axis-0 xf.concat of
// block parameters that joins them (blocks): set by xf-assign-weight-storage,
// read by the kernel descriptions (#xf.gemm_kernel `storage`), the host
// lowering and the manifest. Absent: f32. XfDialect.cpp verifies where it may
// stand.
def Xf_WeightStorageAttr : EnumAttr<Xf_Dialect, Xf_WeightStorage, "weight_storage"> {
  let assemblyFormat = "`<` $value `>`";
}

def Xf_DeviceLoopKernelAttr : Xf_Attr<"DeviceLoopKernel", "device_loop_kernel"> {
  let summary = "a loop kernel as a Halide CUDA pipeline (under a CUDA target)";
  let description = [{
    Every norm, softmax, gather, elementwise op and layout copy of a CUDA
    build is a Halide pipeline of its own (docs/gpu.md): `kind` says which,
    `width` the columns of a row (0: known at run time), `heads` and
    `head_width` a rotary kernel's shape, `constant` its one constant (ε,
    a scale factor, a rotary or sinusoid base; bit for bit), `map` a map
    kernel's function, `flag` the kind's one option (a bf16 table, a
    broadcast row, halves pairs, centring), `affine_params` a norm's
    γ/β count and `row_positions` that a position kernel reads each row's
    position from an int64 buffer (a packed step's table) instead of an
    offset. Parameters at their default value are not printed.

    ```mlir
    #xf.device_loop_kernel<kind = normalize, width = 768, constant = 1.000000e-05,
                           flag = true, affine_params = 2>
    ```
  }];
  let parameters = (ins EnumParameter<Xf_DeviceLoopKind>:$kind,
      DefaultValuedParameter<"int64_t", "0">:$width,
      DefaultValuedParameter<"int64_t", "0">:$heads,
      DefaultValuedParameter<"int64_t", "0">:$head_width,
      Xf_F64Parameter<"the kernel's constant", "0.0">:$constant,
      Xf_DefaultEnumParameter<Xf_DeviceLoopMap, "relu">:$map,
      DefaultValuedParameter<"bool", "false">:$flag,
      DefaultValuedParameter<"int64_t", "0">:$affine_params,
      DefaultValuedParameter<"bool", "false">:$row_positions);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // XF_KERNEL_ATTRS_TD
