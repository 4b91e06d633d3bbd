// RUN: xf-opt %s | FileCheck %s
// RUN: xf-opt %s | xf-opt | FileCheck %s
// RUN: xf-opt %s --mlir-print-op-generic | xf-opt | FileCheck %s

// Round trip of the kernel descriptions: parameters at their default value are
// left out of the text, every other one is printed and parsed back.

// CHECK-LABEL: func.func @gemm_plain
// CHECK-SAME: xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, bias = true, activation = gelu_tanh, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>
func.func @gemm_plain() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, bias = true, activation = gelu_tanh, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// Defaults written out are the same attribute, printed without them.
// CHECK-LABEL: func.func @gemm_defaults_written
// CHECK-SAME: xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, bias = true, activation = gelu_tanh, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>
func.func @gemm_defaults_written() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, storage = f32, bf16_inputs = false, packed = false, bias = true, residual = false, activation = gelu_tanh, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// Every parameter away from its default, the CUDA schedule included.
// CHECK-LABEL: func.func @gemm_all
// CHECK-SAME: xf.k = #xf.gemm_kernel<k = 576, n = 1536, weight = nk, storage = bf16, bf16_inputs = true, packed = true, bias = true, residual = true, activation = swiglu, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = false, reg_tile_cols = 128, reg_tile_rows = 16, reg_tall_rows = 256, reg_tall_tile_rows = 64, reg_thread_rows = 8, reg_unroll_k = 4, tile_cols = 128, tile_rows = 32, thread_cols = 8, thread_rows = 4, slice_k = 8, gemv_cols = 64, gemv_slices = 8, gemv_lane_cols = 4, reg_split_k = 2, reg_fill_blocks = 128>>
func.func @gemm_all() attributes {xf.k = #xf.gemm_kernel<k = 576, n = 1536, weight = nk, storage = bf16, bf16_inputs = true, packed = true, bias = true, residual = true, activation = swiglu, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = false, reg_tile_cols = 128, reg_tile_rows = 16, reg_tall_rows = 256, reg_tall_tile_rows = 64, reg_thread_rows = 8, reg_unroll_k = 4, tile_cols = 128, tile_rows = 32, thread_cols = 8, thread_rows = 4, slice_k = 8, gemv_cols = 64, gemv_slices = 8, gemv_lane_cols = 4, reg_split_k = 2, reg_fill_blocks = 128>>} {
  return
}

// ggml blocks along K of an [N, K] weight.
// CHECK-LABEL: func.func @gemm_blocks
// CHECK-SAME: xf.k = #xf.gemm_kernel<k = 576, n = 192, weight = nk, storage = q4_1, residual = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>
func.func @gemm_blocks() attributes {xf.k = #xf.gemm_kernel<k = 576, n = 192, weight = nk, storage = q4_1, residual = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// CHECK-LABEL: func.func @attention_plain
// CHECK-SAME: xf.k = #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 64, dv = 64, causal = true, scale = 1.250000e-01, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>
func.func @attention_plain() attributes {xf.k = #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 64, dv = 64, causal = true, scale = 0.125, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>} {
  return
}

// A scale with no short decimal form reads back bit for bit (1/sqrt(48)).
// CHECK-LABEL: func.func @attention_all
// CHECK-SAME: xf.k = #xf.attention_kernel<heads = 9, kv_heads = 3, dk = 64, dv = 32, causal = true, scale = 0.14433756729740643, rope = halves, rope_base = 1.000000e+05, rope_keys = false, batched_decode = true, half_key_values = true, segmented = true, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>, gpu_schedule = #xf.gpu_attention_schedule<query_block = 8, key_block = 64, decode_key_block = 16, decode_blocks = 132, decode_block_heads = 2>>
func.func @attention_all() attributes {xf.k = #xf.attention_kernel<heads = 9, kv_heads = 3, dk = 64, dv = 32, causal = true, scale = 0.14433756729740643, rope = halves, rope_base = 100000.0, rope_keys = false, batched_decode = true, half_key_values = true, segmented = true, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>, gpu_schedule = #xf.gpu_attention_schedule<query_block = 8, key_block = 64, decode_key_block = 16, decode_blocks = 132, decode_block_heads = 2>>} {
  return
}

// CHECK-LABEL: func.func @weight_storage
// CHECK: xf.parameter "w" {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<32x64xf32>
func.func @weight_storage() {
  %w = xf.parameter "w" {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<32x64xf32>
  return
}

// Flash-decoding's merge in the GEMV (CUDA, CudaRangeMerge.cpp): the partials' heads and ranges.
// CHECK-LABEL: func.func @gemm_range_merge
// CHECK-SAME: xf.k = #xf.gemm_kernel<k = 768, n = 768, weight = kn, bias = true, residual = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, merge_heads = 12, merge_ranges = 22>
func.func @gemm_range_merge() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 768, weight = kn, bias = true, residual = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, merge_heads = 12, merge_ranges = 22>} {
  return
}

// A norm prologue (CUDA, xf-fuse-norm-into-gemm): the norm, its ε read back bit for bit, γ, β.
// CHECK-LABEL: func.func @gemm_norm
// CHECK-SAME: xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, bias = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, norm = layer_norm, norm_epsilon = 1.000000e-05, norm_gamma = true, norm_beta = true>
func.func @gemm_norm() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, bias = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, norm = layer_norm, norm_epsilon = 1.0e-05, norm_gamma = true, norm_beta = true>} {
  return
}
