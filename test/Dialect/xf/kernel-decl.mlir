// RUN: xf-opt %s | FileCheck %s
// RUN: xf-opt %s | xf-opt | FileCheck %s
// RUN: xf-opt %s --mlir-print-op-generic | xf-opt | FileCheck %s

// A host module's kernel declarations (xf.kernel_decl) and the CUDA loop
// kernels' description: parameters at their default value are left out.

// CHECK: xf.kernel_decl @xf_attention_0 = #xf.attention_kernel<heads = 2, kv_heads = 2, dk = 8, dv = 8, causal = true, scale = 1.250000e-01, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>
xf.kernel_decl @xf_attention_0 = #xf.attention_kernel<heads = 2, kv_heads = 2, dk = 8, dv = 8, causal = true, scale = 1.250000e-01, schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>>
// CHECK: xf.kernel_decl @xf_norm = #xf.device_loop_kernel<kind = normalize, width = 768, constant = 1.000000e-05, flag = true, affine_params = 2>
xf.kernel_decl @xf_norm = #xf.device_loop_kernel<kind = normalize, width = 768, heads = 0, constant = 1.000000e-05, map = relu, flag = true, affine_params = 2>
// CHECK: xf.kernel_decl @xf_rotary = #xf.device_loop_kernel<kind = rotary, heads = 12, head_width = 64, constant = 1.000000e+04>
xf.kernel_decl @xf_rotary = #xf.device_loop_kernel<kind = rotary, heads = 12, head_width = 64, constant = 10000.0>
// CHECK: xf.kernel_decl @xf_scale = #xf.device_loop_kernel<kind = map, width = 64, constant = 1.250000e-01, map = scale>
xf.kernel_decl @xf_scale = #xf.device_loop_kernel<kind = map, width = 64, constant = 1.250000e-01, map = scale>
// CHECK: xf.kernel_decl @xf_positions_at = #xf.device_loop_kernel<kind = position, width = 768, row_positions = true>
xf.kernel_decl @xf_positions_at = #xf.device_loop_kernel<kind = position, width = 768, row_positions = true>
// CHECK: xf.kernel_decl @xf_copy = #xf.device_loop_kernel<kind = copy>
xf.kernel_decl @xf_copy = #xf.device_loop_kernel<kind = copy>
