// The GEMM emitter of xf-lower-to-host (GemmEmitter.cpp): one Halide pipeline
// call per xf.gemm on (input, weight, [bias], [residual], out) buffers; the
// weight packed at load (a 3-D tile-major buffer xf_prepare fills) or as
// stored; on ggml blocks with q8-gemm-inputs, libxfrt's 8-bit GEMV (rows below
// gemv_rows_below) or GEMM first, the Halide kernel when that declines (1); with
// bf16 inputs on a weight packed at load, libxfrt's AMX bf16 GEMM first from
// gemv_rows_below rows on (AmxBf16GemmCall.cpp), the Halide kernel when that
// declines (1: fewer rows, or no AMX bf16 where it runs) — not without packing.
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host | FileCheck %s --implicit-check-not=xfrt_amx_bf16_gemm
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-schedules --xf-lower-to-host | FileCheck %s --check-prefix=CALL --implicit-check-not=xfrt_amx_bf16_gemm
// RUN: xf-opt %s --xf-pack-sequences "--xf-assign-weight-storage=weight-type=bf16 bf16-gemm-inputs" --xf-assign-schedules --xf-pack-weights-at-load --xf-lower-to-host | FileCheck %s --check-prefix=AMX
// RUN: xf-opt %s --xf-pack-sequences "--xf-assign-weight-storage=weight-type=bf16 bf16-gemm-inputs" --xf-assign-schedules --xf-lower-to-host | FileCheck %s --check-prefix=CALL --implicit-check-not=xfrt_amx_bf16_gemm
// RUN: xf-opt %s --xf-pack-sequences --xf-assign-weight-storage=block-parameters=w1=q8_0,w2=q4_0 --xf-assign-schedules "--xf-lower-to-host=q8-gemm-inputs block-dot-isa=1" | FileCheck %s --check-prefix=Q8

module attributes {xf.hyperparameters = {l_max = 64 : i64}, xf.model = "decoder"} {
  func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x64xf32> {
    %wte = xf.parameter "wte" : tensor<16x64xf32>
    %w1 = xf.parameter "w1" : tensor<256x64xf32>
    %b1 = xf.parameter "b1" : tensor<256xf32>
    %w2 = xf.parameter "w2" : tensor<64x256xf32>
    %b2 = xf.parameter "b2" : tensor<64xf32>
    %x = xf.token_embed %wte[%tokens] : tensor<16x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %h = xf.gemm %x, %w1 bias %b1 activation gelu_tanh transpose_weight : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<?x256xf32>
    %y = xf.gemm %h, %w2 bias %b2 residual %x activation none transpose_weight : (tensor<?x256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
    return %y : tensor<?x64xf32>
  }
}

// CHECK-LABEL: func.func @xf_prepare(
// CHECK: call @xf_gemm_0_pack(
// CHECK: call @xf_gemm_1_pack(
// CHECK-LABEL: func.func @xf_forward(
// CHECK: llvm.alloca %c3_i64 x !llvm.struct<(i32, i32, i32, i32)>
// CHECK: call @xf_gemm_0(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: llvm.alloca %c3_i64{{.*}} x !llvm.struct<(i32, i32, i32, i32)>
// CHECK: call @xf_gemm_1(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: @xf_model_manifest(
// CHECK-SAME: \22kind\22: \22gemm\22,{{.*}}\22name\22: \22xf_gemm_0\22,\0A      \22op\22: \22xf.gemm\22,
// CHECK-SAME: \22kind\22: \22gemm\22,{{.*}}\22name\22: \22xf_gemm_1\22,\0A      \22op\22: \22xf.gemm\22,

// CALL-NOT: _pack(
// CALL-LABEL: func.func @xf_forward(
// CALL-NOT: llvm.alloca %c3_i64{{.*}} x !llvm.struct<(i32, i32, i32, i32)>
// CALL: call @xf_gemm_0(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) :
// CALL: call @xf_gemm_1(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) :

// Q8-LABEL: func.func @xf_forward(
// Q8: scf.if %{{.*}} -> (i32) {
// Q8: func.call @xfrt_block_gemv(
// Q8: } else {
// Q8: %[[RC:.*]] = func.call @xfrt_block_gemm(
// Q8: scf.if %{{.*}} -> (i32) {
// Q8: func.call @xf_gemm_0(
// Q8: } else {
// Q8: scf.yield %[[RC]] : i32
// Q8: func.call @xfrt_block_gemv(
// Q8: func.call @xf_gemm_1(

// The first GEMM (K 64, N 256, tiles of 48 columns, bias, gelu_tanh = 2) reads its packed
// weight — the pointer its Halide kernel's descriptor holds — from the rows the kernel rounds.
// AMX-LABEL: func.func @xf_forward(
// AMX: %[[MANY:.*]] = arith.cmpi sge, %[[ROWS:.*]], %c{{[0-9_]+}}_i64 : i64
// AMX: %[[S0:.*]] = scf.if %[[MANY]] -> (i32) {
// AMX: %[[AMX0:.*]] = func.call @xfrt_amx_bf16_gemm(%{{.*}}, %c64_i64{{[_0-9]*}}, %[[ROWS]], %c64_i64{{[_0-9]*}}, %[[W0:[0-9]+]], %c48_i64{{[_0-9]*}}, %c256_i64{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c0_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %{{.*}}, %c256_i64{{[_0-9]*}})
// AMX: scf.yield %[[AMX0]] : i32
// AMX: } else {
// AMX: scf.yield %c1_i32{{[_0-9]*}} : i32
// AMX: %[[DECLINED:.*]] = arith.cmpi eq, %[[S0]], %c1_i32{{[_0-9]*}} : i32
// AMX: scf.if %[[DECLINED]] -> (i32) {
// AMX: llvm.store %[[W0]], %{{[0-9]+}} : !llvm.ptr, !llvm.ptr
// AMX: func.call @xf_gemm_0(
// AMX: } else {
// AMX: scf.yield %[[S0]] : i32
// The second (K 256, N 64, residual with its stride 64, no activation).
// AMX: func.call @xfrt_amx_bf16_gemm(%{{.*}}, %c256_i64{{[_0-9]*}}, %{{.*}}, %c256_i64{{[_0-9]*}}, %{{.*}}, %c48_i64{{[_0-9]*}}, %c64_i64{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c64_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %{{.*}}, %c64_i64{{[_0-9]*}})
// AMX: func.call @xf_gemm_1(
// AMX: func.func private @xfrt_amx_bf16_gemm(!llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr, i64) -> i32
