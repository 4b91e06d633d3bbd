// RUN: xf-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the kernel descriptions, and malformed text.

// expected-error @+1 {{k = 0 and n = 2304 must be positive}}
func.func @case0() attributes {xf.k = #xf.gemm_kernel<k = 0, n = 2304, weight = kn, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+1 {{a weight of q8_0 blocks needs weight = nk and k a multiple of 32 (k = 768)}}
func.func @case1() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 64, weight = kn, storage = q8_0, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+1 {{a weight of q4_0 blocks needs weight = nk and k a multiple of 32 (k = 40)}}
func.func @case2() attributes {xf.k = #xf.gemm_kernel<k = 40, n = 64, weight = nk, storage = q4_0, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+1 {{bf16_inputs needs storage = bf16}}
func.func @case3() attributes {xf.k = #xf.gemm_kernel<k = 64, n = 64, weight = kn, bf16_inputs = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+1 {{a packed weight needs the schedule's pack_weights and no blocks}}
func.func @case4() attributes {xf.k = #xf.gemm_kernel<k = 64, n = 64, weight = kn, packed = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = false, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+1 {{a packed weight needs the schedule's pack_weights and no blocks}}
func.func @case5() attributes {xf.k = #xf.gemm_kernel<k = 64, n = 64, weight = nk, storage = q8_0, packed = true, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+1 {{struct is missing required parameter: schedule}}
func.func @case6() attributes {xf.k = #xf.gemm_kernel<k = 64, n = 64, weight = kn>} {
  return
}

// -----

// expected-error @+2 {{expected ::mlir::xf::WeightLayout to be one of: kn, nk}}
// expected-error @+1 {{failed to parse Xf_GemmKernelAttr parameter 'weight'}}
func.func @case7() attributes {xf.k = #xf.gemm_kernel<k = 64, n = 64, weight = kk, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+2 {{expected ::mlir::xf::WeightStorage to be one of: f32, bf16, q8_0, q4_0, q4_1}}
// expected-error @+1 {{failed to parse Xf_GemmKernelAttr parameter 'storage'}}
func.func @case8() attributes {xf.k = #xf.gemm_kernel<k = 64, n = 64, weight = kn, storage = f16, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: tile_cols}}
func.func @case9() attributes {xf.k = #xf.gemm_kernel<k = 64, n = 64, weight = kn, tile_cols = 48, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+2 {{tile_cols = 0 is out of range [1, 256]}}
// expected-error @+1 {{failed to parse Xf_GemmKernelAttr parameter 'schedule'}}
func.func @case10() attributes {xf.k = #xf.gemm_kernel<k = 64, n = 64, weight = kn, schedule = #xf.gemm_schedule<tile_cols = 0, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>>} {
  return
}

// -----

// expected-error @+1 {{heads, kv_heads, dk and dv must be positive}}
func.func @case11() attributes {xf.k = #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 0, dv = 64, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>} {
  return
}

// -----

// expected-error @+1 {{kv_heads = 5 must divide heads = 12}}
func.func @case12() attributes {xf.k = #xf.attention_kernel<heads = 12, kv_heads = 5, dk = 64, dv = 64, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>} {
  return
}

// -----

// expected-error @+1 {{scale must be finite and nonzero}}
func.func @case13() attributes {xf.k = #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 64, dv = 64, scale = 0.0, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>} {
  return
}

// -----

// expected-error @+1 {{rope needs an even dk and a finite rope_base above 1}}
func.func @case14() attributes {xf.k = #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 63, dv = 64, rope = adjacent, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>} {
  return
}

// -----

// expected-error @+1 {{rope needs an even dk and a finite rope_base above 1}}
func.func @case15() attributes {xf.k = #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 64, dv = 64, rope = halves, rope_base = 1.0, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>} {
  return
}

// -----

// expected-error @+1 {{batched_decode needs causal}}
func.func @case16() attributes {xf.k = #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 64, dv = 64, batched_decode = true, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>} {
  return
}

// -----

// expected-error @+2 {{expected floating point literal}}
// expected-error @+1 {{failed to parse Xf_AttentionKernelAttr parameter 'scale'}}
func.func @case17() attributes {xf.k = #xf.attention_kernel<heads = 12, kv_heads = 12, dk = 64, dv = 64, scale = true, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>} {
  return
}

// -----

// expected-error @+2 {{expected ::mlir::xf::WeightStorage to be one of: f32, bf16, q8_0, q4_0, q4_1}}
// expected-error @+1 {{failed to parse Xf_WeightStorageAttr parameter 'value'}}
func.func @case18() attributes {xf.k = #xf.weight_storage<int8>} {
  return
}

// -----

// expected-error @+1 {{norm_epsilon, norm_gamma and norm_beta need a norm}}
func.func @norm_fields_without_norm() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, norm_gamma = true>} {
  return
}

// -----

// expected-error @+1 {{norm_beta needs norm = layer_norm and norm_gamma}}
func.func @norm_rms_beta() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, norm = rms_norm, norm_epsilon = 1.0e-06, norm_gamma = true, norm_beta = true>} {
  return
}

// -----

// expected-error @+1 {{merge_heads and merge_ranges must be positive together, merge_heads divide k, with weight = kn and no norm}}
func.func @merge_heads_alone() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 768, weight = kn, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, merge_heads = 12>} {
  return
}

// -----

// expected-error @+1 {{merge_heads and merge_ranges must be positive together, merge_heads divide k, with weight = kn and no norm}}
func.func @merge_heads_not_dividing() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 768, weight = kn, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, merge_heads = 5, merge_ranges = 22>} {
  return
}

// -----

// expected-error @+1 {{merge_heads and merge_ranges must be positive together, merge_heads divide k, with weight = kn and no norm}}
func.func @merge_nk() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 768, weight = nk, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, merge_heads = 12, merge_ranges = 22>} {
  return
}

// -----

// expected-error @+1 {{norm_epsilon must be non-negative}}
func.func @norm_negative_epsilon() attributes {xf.k = #xf.gemm_kernel<k = 768, n = 2304, weight = kn, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>, norm = layer_norm, norm_epsilon = -1.0>} {
  return
}
