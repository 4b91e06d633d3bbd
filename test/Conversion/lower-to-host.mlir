// xf-lower-to-host through xf-opt: the kernel-level module (schedules from
// xf-assign-schedules) becomes the host code of docs/abi.md, the same that
// `xfc --emit=host` prints.
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host | FileCheck %s
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-weight-storage=weight-type=bf16 --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host | FileCheck %s --check-prefix=BF16
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-weight-storage=block-parameters=wte=q8_0,wqkv=q4_0,wo=q8_0 --xf-assign-schedules --xf-lower-to-host | FileCheck %s --check-prefix=BLOCKS
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host=kernel-output-hook | FileCheck %s --check-prefix=HOOK
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-lower-to-host=cuda | FileCheck %s --check-prefix=CUDA
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host=kv-cache-type=f16 | FileCheck %s --check-prefix=HALF

module attributes {xf.hyperparameters = {l_max = 100 : i64}, xf.model = "decoder"} {
  func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x8xf32> {
    %wte = xf.parameter "wte" : tensor<8x32xf32>
    %wqkv = xf.parameter "wqkv" : tensor<96x32xf32>
    %wo = xf.parameter "wo" : tensor<8x32xf32>
    %x = xf.token_embed %wte[%tokens] : tensor<8x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %qkv = xf.gemm %x, %wqkv activation none transpose_weight : (tensor<?x32xf32>, tensor<96x32xf32>) -> tensor<?x96xf32>
    %q = xf.slice %qkv axis 1 offset 0 : tensor<?x96xf32> -> tensor<?x32xf32>
    %k = xf.slice %qkv axis 1 offset 32 : tensor<?x96xf32> -> tensor<?x32xf32>
    %v = xf.slice %qkv axis 1 offset 64 : tensor<?x96xf32> -> tensor<?x32xf32>
    %a = xf.attention causal heads 2 %q, %k, %v : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
    %y = xf.add %a, %x : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
    %logits = xf.gemm %y, %wo activation none transpose_weight : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
    return %logits : tensor<?x8xf32>
  }
}

// The module's attributes go into the manifest; none are left on it.
// CHECK: module {
// CHECK-NOT: xf.
// CHECK-LABEL: func.func @xf_prepare(%arg0: !llvm.ptr, %arg1: !llvm.ptr) -> i32
// Both GEMM weights packed at load, by their kernels' _pack functions.
// CHECK: call @xf_gemm_0_pack(
// CHECK: call @xf_gemm_1_pack(
// CHECK-LABEL: func.func @xf_forward(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: i64, %arg4: !llvm.ptr, %arg5: i64, %arg6: !llvm.ptr, %arg7: !llvm.ptr) -> i32
// CHECK: call @xf_gather_rows_32_r{{[0-9]+}}(
// CHECK: call @xf_gemm_0(
// CHECK: call @xf_attention_0(
// CHECK: call @xf_add_32_r{{[0-9]+}}(
// CHECK: call @xf_gemm_1(
// CHECK-DAG: func.func private @xfrt_profile_enter(i32)
// CHECK-DAG: func.func private @xf_gemm_0(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// Causal self-attention over one sequence: every entry point runs (none
// returns the refusal status 1 straight away).
// CHECK-LABEL: func.func @xf_forward_cached(
// CHECK-NOT: return
// CHECK: call @xf_attention_0(
// CHECK-LABEL: func.func @xf_forward_packed(
// CHECK-NOT: return
// A packed batch's attention: one call of the segmented kernel (q, k, v, block table, out).
// CHECK: call @xf_attention_1(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK-LABEL: func.func @xf_forward_cached_packed(
// CHECK-NOT: return
// CHECK: call @xf_attention_0(
// CHECK-LABEL: func.func @xf_scratch_bytes(
// K and V of one attention, 32 columns each, of ⌈positions⌉₁₆ rows.
// CHECK-LABEL: func.func @xf_cache_bytes(
// CHECK: arith.constant 256 : i64
// CHECK: llvm.mlir.global external constant @xf_model_manifest(
// CHECK-SAME: \22cache_positions\22: 100,
// CHECK-SAME: \22cached\22: true,
// CHECK-SAME: \22model\22: \22decoder\22,
// CHECK-SAME: \22packed\22: true,
// CHECK-SAME: \22dtype\22: \22f32\22,

// BF16: @xf_model_manifest(
// BF16-SAME: \22dtype\22: \22bf16\22,{{.*}}\22name\22: \22wte\22
// BF16-SAME: \22dtype\22: \22bf16\22,{{.*}}\22name\22: \22wqkv\22

// Weights kept in ggml blocks (and, here, none packed at load).
// BLOCKS-NOT: _pack(
// BLOCKS: @xf_model_manifest(
// BLOCKS-SAME: \22dtype\22: \22q8_0\22,{{.*}}\22name\22: \22wte\22
// BLOCKS-SAME: \22dtype\22: \22q4_0\22,{{.*}}\22name\22: \22wqkv\22
// BLOCKS-SAME: \22dtype\22: \22q8_0\22,{{.*}}\22name\22: \22wo\22

// HOOK-LABEL: func.func @xf_forward(
// HOOK: call @xf_gemm_0(
// HOOK: call @xf_check_kernel_output(

// CUDA: \22device\22: \22cuda\22

// A float16 KV cache: the cached entry points copy new K/V rows in rounded, address the cache in
// float16 elements and call their own attention kernel (and its batched step); xf_forward and
// the packed batch keep the float32 ones. 2 bytes × 2 × 32 columns × ⌈positions⌉₁₆.
// HALF-LABEL: func.func @xf_forward(
// HALF: call @xf_attention_0(
// HALF-LABEL: func.func @xf_forward_cached(
// HALF: llvm.getelementptr %arg7[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f16
// HALF: call @xf_copy2d_to_f16(
// HALF: call @xf_copy2d_to_f16(
// HALF: call @xf_attention_1(
// HALF-LABEL: func.func @xf_forward_packed(
// HALF: call @xf_attention_2(
// HALF-LABEL: func.func @xf_forward_cached_packed(
// HALF: call @xf_attention_1_batched(
// HALF-LABEL: func.func @xf_cache_bytes(
// HALF: arith.constant 128 : i64
// HALF: \22cache_type\22: \22f16\22,
