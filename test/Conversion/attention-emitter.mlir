// The attention emitter of xf-lower-to-host (AttentionEmitter.cpp): which call
// each entry point makes for one causal self-attention (2 heads of 64).
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host | FileCheck %s
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host=decode-attention-isa=1 | FileCheck %s --check-prefix=DECODE
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-lower-to-host=cuda | FileCheck %s --check-prefix=CUDA

module attributes {xf.hyperparameters = {l_max = 100 : i64}, xf.model = "decoder"} {
  func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x8xf32> {
    %wte = xf.parameter "wte" : tensor<8x128xf32>
    %wqkv = xf.parameter "wqkv" : tensor<384x128xf32>
    %wo = xf.parameter "wo" : tensor<8x128xf32>
    %x = xf.token_embed %wte[%tokens] : tensor<8x128xf32>, tensor<?xi32> -> tensor<?x128xf32>
    %qkv = xf.gemm %x, %wqkv activation none transpose_weight : (tensor<?x128xf32>, tensor<384x128xf32>) -> tensor<?x384xf32>
    %q = xf.slice %qkv axis 1 offset 0 : tensor<?x384xf32> -> tensor<?x128xf32>
    %k = xf.slice %qkv axis 1 offset 128 : tensor<?x384xf32> -> tensor<?x128xf32>
    %v = xf.slice %qkv axis 1 offset 256 : tensor<?x384xf32> -> tensor<?x128xf32>
    %a = xf.attention causal heads 2 %q, %k, %v : tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32> -> tensor<?x128xf32>
    %logits = xf.gemm %a, %wo activation none transpose_weight : (tensor<?x128xf32>, tensor<8x128xf32>) -> tensor<?x8xf32>
    return %logits : tensor<?x8xf32>
  }
}

// xf_forward: the kernel over the batch's rows (q, k, v, out).
// CHECK-LABEL: func.func @xf_forward(
// CHECK: call @xf_attention_0(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// xf_forward_cached: the new K/V rows copied into the cache head by head, then
// the same kernel over the cache.
// CHECK-LABEL: func.func @xf_forward_cached(
// CHECK-NOT: func.func
// CHECK: func.call @xf_copy2d(
// CHECK-NOT: func.func
// CHECK: call @xf_attention_0(
// CHECK-NOT: xfrt_decode_attention
// xf_forward_packed: one call of the segmented kernel (q, k, v, block table, out).
// CHECK-LABEL: func.func @xf_forward_packed(
// CHECK-NOT: func.func
// CHECK: call @xf_attention_1(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) :
// xf_forward_cached_packed: when every sequence decodes one row, the batched
// kernel over all of them; else one call per sequence over its cache.
// CHECK-LABEL: func.func @xf_forward_cached_packed(
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK: func.call @xf_attention_0_batched(
// CHECK: } else {
// CHECK: scf.for
// CHECK: func.call @xf_attention_0(

// With libxfrt's decode attention: a one-row step calls it, other steps the kernel.
// DECODE-LABEL: func.func @xf_forward_cached(
// DECODE: scf.if %{{.*}} -> (i32) {
// DECODE: func.call @xfrt_decode_attention(
// DECODE: } else {
// DECODE: func.call @xf_attention_0(
// DECODE-LABEL: func.func @xf_forward_cached_packed(
// DECODE: scf.if %{{.*}} -> (i32) {
// DECODE: func.call @xfrt_decode_attention_batched(
// DECODE-NOT: xf_attention_0_batched
// DECODE: } else {
// DECODE: func.call @xfrt_decode_attention(
// DECODE: func.call @xf_attention_0(

// On the GPU: K and V go into the cache in one launch — by the key-range pass at <= 4 rows, by
// the append kernel in the other branch — and a packed batch's sequences attend one call each
// (no segmented kernel, no batched step).
// CUDA-LABEL: func.func @xf_forward_cached(
// CUDA: call @xf_attention_0_decode_ranges(
// CUDA: } else {
// CUDA: call @xf_append_key_values(
// CUDA: call @xf_attention_0(
// CUDA-LABEL: func.func @xf_forward_packed(
// CUDA: scf.for
// CUDA: func.call @xf_attention_0(
// CUDA-NOT: @xf_attention_1
// CUDA-LABEL: func.func @xf_forward_cached_packed(
// CUDA-NOT: _batched
// CUDA: scf.for
// CUDA: func.call @xf_attention_0_decode_ranges(
// CUDA: } else {
// CUDA: func.call @xf_append_key_values(
// CUDA: func.call @xf_attention_0(
