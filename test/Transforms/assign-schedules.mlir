// RUN: xf-opt %s --xf-assign-schedules | FileCheck %s --check-prefix=AVX512
// RUN: xf-opt %s --xf-assign-schedules="vector-width=8 vector-registers=16" | FileCheck %s --check-prefix=AVX2

// AVX512-LABEL: func.func @kernels
func.func @kernels(%x: tensor<?x768xf32>, %w: tensor<768x2304xf32>, %w2: tensor<128x64xf32>, %y: tensor<?x128xf32>) -> (tensor<?x2304xf32>, tensor<?x768xf32>, tensor<?x64xf32>, tensor<?x2304xf32>) {
  // 32 registers: 3 vectors × 8 rows; 16 registers: 2 vectors × 6 rows.
  // AVX512: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 768, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>}
  // AVX2: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 16, tile_rows = 6, k_block = 768,
  %g = xf.gemm %x, %w activation none : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  // K up to 1536 is one block.
  // AVX512: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 128,
  %s = xf.gemm %y, %w2 activation none : (tensor<?x128xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  // Attention score tiles of 4 vectors; where registers are few, 3 rows and query blocks of 32.
  // AVX512: xf.attention causal heads 12 {{.*}} {schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>}
  // AVX2: xf.attention causal heads 12 {{.*}} {schedule = #xf.attention_schedule<query_block = 32, key_block = 32, row_tile = 3, decode_key_tile = 4>}
  %a = xf.attention causal heads 12 %x, %x, %x : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32> -> tensor<?x768xf32>
  // An existing schedule (e.g. from the tuner) is kept.
  // AVX512: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 32, tile_rows = 4, k_block = 512,
  // AVX2: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 32, tile_rows = 4, k_block = 512,
  %t = xf.gemm %x, %w activation none {schedule = #xf.gemm_schedule<tile_cols = 32, tile_rows = 4, k_block = 512, pack_weights = true, rows_per_task = 128, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  return %g, %a, %s, %t : tensor<?x2304xf32>, tensor<?x768xf32>, tensor<?x64xf32>, tensor<?x2304xf32>
}

// Loop kernels: tasks of 16384 floats of rows (at least one row); a schedule
// already there is kept.
// AVX512-LABEL: func.func @loops
func.func @loops(%x: tensor<?x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>, %u: tensor<?x40000xf32>) -> (tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x40000xf32>) {
  // AVX512: xf.layer_norm {{.*}} {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 21, vector_bits = 0>}
  %n = xf.layer_norm %x gamma %g beta %b eps 1.0E-5 : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<?x768xf32>
  // AVX512: xf.softmax {{.*}} {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 0, vector_bits = 256>}
  %s = xf.softmax %n {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 0, vector_bits = 256>} : tensor<?x768xf32>
  // AVX512: xf.softmax {{.*}} {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 1, vector_bits = 0>}
  %w = xf.softmax %u : tensor<?x40000xf32>
  // AVX512: xf.scale {{.*}} {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 21, vector_bits = 0>}
  %c = xf.scale %n by 0.5 : tensor<?x768xf32>
  return %c, %s, %w : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x40000xf32>
}

// K past 1536: equal even blocks of at most 1536.
// AVX512-LABEL: func.func @k_blocks
func.func @k_blocks(%x: tensor<?x3072xf32>, %w: tensor<3072x768xf32>, %y: tensor<?x1999xf32>, %v: tensor<1999x64xf32>) -> (tensor<?x768xf32>, tensor<?x64xf32>) {
  // AVX512: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 1536,
  %a = xf.gemm %x, %w activation none : (tensor<?x3072xf32>, tensor<3072x768xf32>) -> tensor<?x768xf32>
  // AVX512: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 1000,
  %b = xf.gemm %y, %v activation none : (tensor<?x1999xf32>, tensor<1999x64xf32>) -> tensor<?x64xf32>
  return %a, %b : tensor<?x768xf32>, tensor<?x64xf32>
}
