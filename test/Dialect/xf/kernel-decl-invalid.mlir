// RUN: xf-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'xf.kernel_decl' op attribute 'kernel' failed to satisfy constraint}}
xf.kernel_decl @k = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>

// -----

func.func @f() {
  // expected-error @+1 {{'xf.kernel_decl' op expects parent op 'builtin.module'}}
  xf.kernel_decl @k = #xf.device_loop_kernel<kind = copy>
  return
}

// -----

// expected-error @+1 {{#xf.device_loop_kernel: width, heads and head_width must not be negative}}
xf.kernel_decl @k = #xf.device_loop_kernel<kind = add, width = -1>

// -----

// expected-error @+1 {{#xf.device_loop_kernel: affine_params must be 0, 1 or 2}}
xf.kernel_decl @k = #xf.device_loop_kernel<kind = normalize, width = 8, affine_params = 3>

// -----

// expected-error @+1 {{#xf.device_loop_kernel: row_positions needs kind position, gather_positions or append_key_values}}
xf.kernel_decl @k = #xf.device_loop_kernel<kind = sinusoid, width = 8, row_positions = true>

// -----

// expected-error @+2 {{expected ::mlir::xf::DeviceLoopKernelKind to be one of: gather, position, gather_positions, sinusoid, add, map, silu, multiply, rotary, normalize, softmax, copy, transpose, append_key_values}}
// expected-error @+1 {{failed to parse Xf_DeviceLoopKernelAttr parameter 'kind'}}
xf.kernel_decl @k = #xf.device_loop_kernel<kind = transpose_all>
