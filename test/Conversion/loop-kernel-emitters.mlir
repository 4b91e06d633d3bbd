// The loop-kernel emitters of xf-lower-to-host (LoopKernelEmitters.cpp): each
// row-wise op becomes one call of its scf loop kernel, named after the op, its
// width and its schedule; in the packed entry point the positional kernels run
// once per sequence (an scf.for over the lengths), the others once over all rows.
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host | FileCheck %s
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-weight-storage=weight-type=bf16 --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host | FileCheck %s --check-prefix=BF16
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-weight-storage=block-parameters=wte=q8_0 --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host | FileCheck %s --check-prefix=BLOCKS

module attributes {xf.hyperparameters = {l_max = 64 : i64}, xf.model = "decoder"} {
  func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x16xf32> {
    %wte = xf.parameter "wte" : tensor<32x16xf32>
    %wpe = xf.parameter "wpe" : tensor<64x16xf32>
    %g = xf.parameter "g" : tensor<16xf32>
    %bias = xf.parameter "bias" : tensor<16xf32>
    %x = xf.token_embed %wte[%tokens] : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %p = xf.pos_embed %wpe for %tokens : tensor<64x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %s = xf.sinusoidal_embed for %tokens base 1.0e4 : tensor<?xi32> -> tensor<?x16xf32>
    %a = xf.add %x, %p : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %a2 = xf.add %a, %s : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %ab = xf.add %a2, %bias : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    %n = xf.layer_norm %ab gamma %g beta %bias eps 1.0e-5 : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    %r = xf.rms_norm %n gamma %g eps 1.0e-6 : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    %q = xf.rope halves heads 2 %r base 1.0e4 : tensor<?x16xf32> -> tensor<?x16xf32>
    %u = xf.silu %q : tensor<?x16xf32>
    %m = xf.mul %u, %r : tensor<?x16xf32>
    %e = xf.relu %m : tensor<?x16xf32>
    %h = xf.gelu tanh %e : tensor<?x16xf32>
    %h2 = xf.gelu erf %h : tensor<?x16xf32>
    %c = xf.scale %h2 by 0.5 : tensor<?x16xf32>
    %y = xf.softmax %c : tensor<?x16xf32>
    return %y : tensor<?x16xf32>
  }
}

// CHECK-LABEL: func.func @xf_forward(
// CHECK: call @xf_gather_rows_16_r{{[0-9]+}}(%{{.*}}, %arg2, %{{.*}}, %arg3) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> ()
// Positions from 0 in xf_forward.
// CHECK: call @xf_position_rows_16_r{{[0-9]+}}(%{{.*}}, %{{.*}}, %arg3, %c0_i64{{.*}}) :
// CHECK: call @xf_sinusoid_rows_16_10000_r{{[0-9]+}}(%{{.*}}, %arg3, %c0_i64{{.*}}) :
// CHECK: call @xf_add_16_r{{[0-9]+}}(
// CHECK: call @xf_add_16_r{{[0-9]+}}(
// A [d] right operand: the broadcast add.
// CHECK: call @xf_add_bias_16_r{{[0-9]+}}(
// CHECK: call @"xf_layer_norm_16_affine_1e-05_r{{[0-9]+}}"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %arg3) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
// CHECK: call @"xf_rms_norm_16_scaled_1e-06_r{{[0-9]+}}"(%{{.*}}, %{{.*}}, %{{.*}}, %arg3) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
// Rotary, SiLU and the product read column slices in place: (pointer, row stride) each.
// CHECK: call @xf_rope_halves_2x8_10000_r{{[0-9]+}}(%{{.*}}, %c16_i64{{.*}}, %{{.*}}, %arg3, %c0_i64{{.*}}) : (!llvm.ptr, i64, !llvm.ptr, i64, i64)
// CHECK: call @xf_silu_16_r{{[0-9]+}}(%{{.*}}, %c16_i64{{.*}}, %{{.*}}, %arg3) : (!llvm.ptr, i64, !llvm.ptr, i64)
// CHECK: call @xf_mul_16_r{{[0-9]+}}(%{{.*}}, %c16_i64{{.*}}, %{{.*}}, %c16_i64{{.*}}, %{{.*}}, %arg3) : (!llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64)
// CHECK: call @xf_relu_16_r{{[0-9]+}}(
// CHECK: call @xf_gelu_tanh_16_r{{[0-9]+}}(
// CHECK: call @xf_gelu_erf_16_r{{[0-9]+}}(
// The factor 0.5 as the bits of a double.
// CHECK: call @xf_scale_16_0x3fe0000000000000_r{{[0-9]+}}(
// The returned tensor is written in place: the output argument.
// CHECK: call @xf_softmax_16_r{{[0-9]+}}(%{{.*}}, %arg6, %arg3) :
// CHECK-LABEL: func.func @xf_forward_packed(
// CHECK: call @xf_gather_rows_16_r{{[0-9]+}}(
// CHECK: scf.for
// CHECK: func.call @xf_position_rows_16_r{{[0-9]+}}(
// CHECK: scf.for
// CHECK: func.call @xf_sinusoid_rows_16_10000_r{{[0-9]+}}(
// CHECK: {{^}}    call @xf_add_16_r{{[0-9]+}}(
// Each call is a "loop" site of the manifest, named after its kernel.
// CHECK: @xf_model_manifest(
// CHECK-SAME: \22kind\22: \22loop\22,{{.*}}\22name\22: \22xf_gather_rows_16_r{{[0-9]+}}\22,{{.*}}\22op\22: \22xf.token_embed\22

// A table kept in bfloat16 is widened as it is gathered.
// BF16-LABEL: func.func @xf_forward(
// BF16: call @xf_gather_bf16_rows_16_r{{[0-9]+}}(

// A table kept in Q8_0 blocks (ggml type 8): libxfrt gathers and dequantizes its rows.
// BLOCKS-LABEL: func.func @xf_forward(
// BLOCKS: %[[Q8:.*]] = arith.constant 8 : i64
// BLOCKS: %[[WIDTH:.*]] = arith.constant 16 : i64
// BLOCKS: call @xfrt_gather_block_rows(%{{.*}}, %[[Q8]], %arg2, %{{.*}}, %arg3, %[[WIDTH]]) : (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
// BLOCKS: @xf_model_manifest(
// BLOCKS-SAME: \22kind\22: \22loop\22,{{.*}}\22name\22: \22xfrt_gather_block_rows\22,{{.*}}\22op\22: \22xf.token_embed\22
