// Call sites share a Halide pipeline exactly when their kernel descriptions
// (#xf.gemm_kernel: shapes, storage, packing, epilogue, CPU and CUDA
// schedules) are the same (KernelNames.cpp): the first two GEMMs share
// xf_gemm_0, the third differs only in its CUDA schedule and gets its own.
// RUN: xf-opt %s --xf-lower-to-host | FileCheck %s

module attributes {xf.hyperparameters = {l_max = 64 : i64}, xf.model = "decoder"} {
  func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x64xf32> {
    %wte = xf.parameter "wte" : tensor<16x64xf32>
    %w1 = xf.parameter "w1" : tensor<64x64xf32>
    %w2 = xf.parameter "w2" : tensor<64x64xf32>
    %w3 = xf.parameter "w3" : tensor<64x64xf32>
    %x = xf.token_embed %wte[%tokens] : tensor<16x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %a = xf.gemm %x, %w1 activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %b = xf.gemm %a, %w2 activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %c = xf.gemm %b, %w3 activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = false, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    return %c : tensor<?x64xf32>
  }
}

// CHECK-LABEL: func.func @xf_forward(
// CHECK: call @xf_gemm_0(
// CHECK: call @xf_gemm_0(
// CHECK: call @xf_gemm_1(
// CHECK-NOT: call @xf_gemm_2(
// CHECK-LABEL: func.func private @xf_gemm_0(
