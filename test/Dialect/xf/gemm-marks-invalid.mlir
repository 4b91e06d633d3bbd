// The GEMM marks `xf.bf16_inputs` (xf-assign-weight-storage's bf16-gemm-inputs)
// and `xf.packed_weight` (xf-pack-weights-at-load) where no kernel reads
// the GEMM so: each rule of XfDialect.cpp's verifier.
// RUN: xf-opt %s -split-input-file -verify-diagnostics

func.func @not_unit(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<64x32xf32>
  // expected-error @+1 {{'xf.bf16_inputs' is a unit attribute, not true}}
  %a = xf.gemm %x, %w activation none {xf.bf16_inputs = true} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

func.func @not_a_gemm(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'xf.packed_weight' is only for xf.gemm, not 'xf.gelu'}}
  %r = xf.gelu erf %x {xf.packed_weight} : tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// bf16 products need bf16 weights (xfc --bf16-gemm-inputs needs --weight-type=bf16).
func.func @bf16_inputs_f32_weight(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<64x32xf32>
  // expected-error @+1 {{'xf.bf16_inputs' needs a weight stored as #xf.weight_storage<bf16>, not f32}}
  %a = xf.gemm %x, %w activation none {xf.bf16_inputs} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

func.func @packed_blocks(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<32x64xf32>
  // expected-error @+1 {{'xf.packed_weight': a weight in ggml blocks is read as stored}}
  %a = xf.gemm %x, %w activation none transpose_weight {xf.packed_weight, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

func.func @packed_without_schedule(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<64x32xf32>
  // expected-error @+1 {{'xf.packed_weight' needs a schedule with pack_weights = true}}
  %a = xf.gemm %x, %w activation none {xf.packed_weight} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

// A tuned schedule that reads the weight as stored.
func.func @packed_schedule_does_not_pack(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<64x32xf32>
  // expected-error @+1 {{'xf.packed_weight' needs a schedule with pack_weights = true}}
  %a = xf.gemm %x, %w activation none {xf.packed_weight, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = false, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

func.func @packed_cuda(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<64x32xf32>
  // expected-error @+1 {{'xf.packed_weight': a CUDA GEMM (gpu_schedule) reads its weight as stored}}
  %a = xf.gemm %x, %w activation none {xf.packed_weight, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>, gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

// A product of two activations: nothing to pack once.
func.func @packed_activation(%x: tensor<?x64xf32>, %y: tensor<64x32xf32>) -> tensor<?x32xf32> {
  %w = xf.gelu erf %y : tensor<64x32xf32>
  // expected-error @+1 {{'xf.packed_weight' needs a weight that is a constant of the model (a parameter, or sliced, joined or transposed from parameters)}}
  %a = xf.gemm %x, %w activation none {xf.packed_weight, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

func.func @loss_and_gradients(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<64x32xf32>
  // expected-error @+1 {{'xf.packed_weight': the training step reads its weights as stored (they change every step)}}
  %a = xf.gemm %x, %w activation none {xf.packed_weight, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

// Packed at load: a parameter, and a concatenation of parameters (a derived weight).
func.func @forward(%x: tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<?x64xf32>) {
  %w = xf.parameter "w" {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<64x32xf32>
  %a = xf.gemm %x, %w activation none {xf.bf16_inputs, xf.packed_weight, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  %u = xf.parameter "u" : tensor<64x32xf32>
  %v = xf.parameter "v" : tensor<64x32xf32>
  %uv = xf.concat %u, %v axis 1 : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x64xf32>
  %b = xf.gemm %x, %uv activation none {xf.packed_weight, schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %a, %b : tensor<?x32xf32>, tensor<?x64xf32>
}
