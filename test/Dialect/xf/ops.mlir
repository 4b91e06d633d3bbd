// RUN: xf-opt %s | FileCheck %s
// RUN: xf-opt %s | xf-opt | FileCheck %s
// RUN: xf-opt %s --mlir-print-op-generic | xf-opt | FileCheck %s

// Every xf op round-trips through its custom assembly format.

// CHECK-LABEL: func.func @parameters_and_data_movement
func.func @parameters_and_data_movement() -> (tensor<64x48xf32>, tensor<48x64xf32>, tensor<64xf32>, tensor<64x16xf32>) {
  // CHECK: %[[W:.*]] = xf.parameter "h.0.attn.c_attn.weight" : tensor<64x48xf32>
  %w = xf.parameter "h.0.attn.c_attn.weight" : tensor<64x48xf32>
  // CHECK: xf.transpose %[[W]] : tensor<64x48xf32> -> tensor<48x64xf32>
  %t = xf.transpose %w : tensor<64x48xf32> -> tensor<48x64xf32>
  // CHECK: xf.row %{{.*}}[0] : tensor<48x64xf32> -> tensor<64xf32>
  %r = xf.row %t[0] : tensor<48x64xf32> -> tensor<64xf32>
  // CHECK: xf.slice %[[W]] axis 1 offset 16 : tensor<64x48xf32> -> tensor<64x16xf32>
  %k = xf.slice %w axis 1 offset 16 : tensor<64x48xf32> -> tensor<64x16xf32>
  // CHECK: xf.concat %{{.*}}, %{{.*}}, %{{.*}} axis 1 : tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32> -> tensor<64x48xf32>
  %c = xf.concat %k, %k, %k axis 1 : tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32> -> tensor<64x48xf32>
  return %c, %t, %r, %k : tensor<64x48xf32>, tensor<48x64xf32>, tensor<64xf32>, tensor<64x16xf32>
}

// CHECK-LABEL: func.func @embeddings
func.func @embeddings(%x: tensor<?xi32>, %offset: index) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %we = xf.parameter "wte.weight" : tensor<256x64xf32>
  %wp = xf.parameter "wpe.weight" : tensor<32x64xf32>
  // CHECK: xf.token_embed %{{.*}}[%{{.*}}] : tensor<256x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %e = xf.token_embed %we[%x] : tensor<256x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: xf.pos_embed %{{.*}} for %{{.*}} : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %p = xf.pos_embed %wp for %x : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: xf.pos_embed %{{.*}} for %{{.*}} offset %{{.*}} : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %q = xf.pos_embed %wp for %x offset %offset : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: xf.sinusoidal_embed for %{{.*}} base 1.000000e+04 : tensor<?xi32> -> tensor<?x64xf32>
  %s = xf.sinusoidal_embed for %x base 1.0e4 : tensor<?xi32> -> tensor<?x64xf32>
  return %e, %p, %q, %s : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func.func @linear_algebra
func.func @linear_algebra(%x: tensor<?x64xf32>) -> (tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %w = xf.parameter "w" : tensor<64x256xf32>
  %wt = xf.parameter "w_t" : tensor<256x64xf32>
  %b = xf.parameter "b" : tensor<256xf32>
  %b64 = xf.parameter "b64" : tensor<64xf32>
  // CHECK: xf.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  %y = xf.linear %x, %w, %b : tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  // CHECK: xf.linear %{{.*}}, %{{.*}} transpose_weight : tensor<?x64xf32>, tensor<256x64xf32> -> tensor<?x256xf32>
  %z = xf.linear %x, %wt transpose_weight : tensor<?x64xf32>, tensor<256x64xf32> -> tensor<?x256xf32>
  // CHECK: xf.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  %m = xf.matmul %y, %w transpose_rhs : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  // CHECK: xf.matmul %{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<256x64xf32> -> tensor<?x64xf32>
  %n = xf.matmul %z, %wt : tensor<?x256xf32>, tensor<256x64xf32> -> tensor<?x64xf32>
  // CHECK: xf.add %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %r = xf.add %x, %m : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: xf.add %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %bb = xf.add %n, %b64 : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %y, %z, %m, %r, %bb : tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func.func @normalisation
func.func @normalisation(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %g = xf.parameter "ln.weight" : tensor<64xf32>
  %b = xf.parameter "ln.bias" : tensor<64xf32>
  // CHECK: xf.layer_norm %{{.*}} gamma %{{.*}} beta %{{.*}} eps 9.9999999999999998E-13 : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %y = xf.layer_norm %x gamma %g beta %b eps 1.0e-12 : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  // CHECK: xf.layer_norm %{{.*}} eps 1.000000e-05 : tensor<?x64xf32> -> tensor<?x64xf32>
  %z = xf.layer_norm %x eps 1.0e-5 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: xf.rms_norm %{{.*}} gamma %{{.*}} eps 9.9999999999999995E-7 : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %r = xf.rms_norm %x gamma %g eps 1.0e-6 : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  // CHECK: xf.rms_norm %{{.*}} eps 0.000000e+00 : tensor<?x64xf32> -> tensor<?x64xf32>
  %s = xf.rms_norm %x eps 0.0 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y, %z, %r, %s : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %kc: tensor<10x64xf32>, %vc: tensor<10x32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  // CHECK: xf.attention causal heads 4 %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  %a = xf.attention causal heads 4 %q, %k, %v : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  // CHECK: xf.attention bidirectional heads 1 %{{.*}}, %{{.*}}, %{{.*}} scale 1.250000e-01 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  %b = xf.attention bidirectional heads 1 %q, %k, %v scale 0.125 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  // CHECK: xf.attention causal heads 4 kv_heads 2 rope halves base 1.000000e+04 %{{.*}}, %{{.*}}, %{{.*}} scale 1.250000e-01 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x16xf32> -> tensor<?x32xf32>
  %kr = xf.slice %k axis 1 offset 0 : tensor<?x64xf32> -> tensor<?x32xf32>
  %vr = xf.slice %v axis 1 offset 0 : tensor<?x32xf32> -> tensor<?x16xf32>
  %r = xf.attention causal heads 4 kv_heads 2 rope halves base 1.0e4 %q, %kr, %vr scale 0.125 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x16xf32> -> tensor<?x32xf32>
  // CHECK: xf.attention cross heads 2 %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<10x64xf32>, tensor<10x32xf32> -> tensor<?x32xf32>
  %c = xf.attention cross heads 2 %q, %kc, %vc : tensor<?x64xf32>, tensor<10x64xf32>, tensor<10x32xf32> -> tensor<?x32xf32>
  return %a, %b, %c : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// CHECK-LABEL: func.func @multi_head_attention
func.func @multi_head_attention(%x: tensor<?x64xf32>, %z: tensor<?x32xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %wq = xf.parameter "wq" : tensor<64x64xf32>
  %wk = xf.parameter "wk" : tensor<64x64xf32>
  %wv = xf.parameter "wv" : tensor<64x64xf32>
  %wo = xf.parameter "wo" : tensor<64x64xf32>
  %b = xf.parameter "b" : tensor<64xf32>
  %wkz = xf.parameter "wkz" : tensor<32x64xf32>
  // CHECK: xf.mha causal heads 4 %{{.*}} q %{{.*}}, %{{.*}} k %{{.*}}, %{{.*}} v %{{.*}}, %{{.*}} o %{{.*}}, %{{.*}} : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %s = xf.mha causal heads 4 %x q %wq, %b k %wk, %b v %wv, %b o %wo, %b : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: xf.mha bidirectional heads 2 %{{.*}} q %{{.*}} k %{{.*}} v %{{.*}} o %{{.*}} scale 2.500000e-01 transpose_weights : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %t = xf.mha bidirectional heads 2 %x q %wq k %wk v %wv o %wo scale 0.25 transpose_weights : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  // CHECK: xf.mha cross heads 4 %{{.*}} context %{{.*}} q %{{.*}} k %{{.*}} v %{{.*}} o %{{.*}} : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %c = xf.mha cross heads 4 %x context %z q %wq k %wkz v %wkz o %wo : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %s, %t, %c : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func.func @activations_and_unembedding
func.func @activations_and_unembedding(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x256xf32>, tensor<?x256xf32>) {
  // CHECK: xf.relu %{{.*}} : tensor<?x64xf32>
  %r = xf.relu %x : tensor<?x64xf32>
  // CHECK: xf.gelu tanh %{{.*}} : tensor<?x64xf32>
  %g = xf.gelu tanh %r : tensor<?x64xf32>
  // CHECK: xf.gelu erf %{{.*}} : tensor<?x64xf32>
  %e = xf.gelu erf %g : tensor<?x64xf32>
  %we = xf.parameter "wte.weight" : tensor<256x64xf32>
  %wu = xf.parameter "unembed.weight" : tensor<64x256xf32>
  // CHECK: xf.unembed %{{.*}}, tied %{{.*}} : tensor<?x64xf32>, tensor<256x64xf32> -> tensor<?x256xf32>
  %l = xf.unembed %e, tied %we : tensor<?x64xf32>, tensor<256x64xf32> -> tensor<?x256xf32>
  // CHECK: xf.unembed %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64x256xf32> -> tensor<?x256xf32>
  %u = xf.unembed %e, %wu : tensor<?x64xf32>, tensor<64x256xf32> -> tensor<?x256xf32>
  // CHECK: xf.softmax %{{.*}} : tensor<?x256xf32>
  %p = xf.softmax %u : tensor<?x256xf32>
  return %r, %g, %e, %l, %p : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x256xf32>, tensor<?x256xf32>
}

// CHECK-LABEL: func.func @kernel_ops
func.func @kernel_ops(%x: tensor<?x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>, %r: tensor<?x256xf32>, %wt: tensor<256x64xf32>) -> (tensor<?x256xf32>, tensor<?x256xf32>) {
  // CHECK: xf.gemm %{{.*}}, %{{.*}} bias %{{.*}} residual %{{.*}} activation gelu_erf {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<?x256xf32>) -> tensor<?x256xf32>
  %y = xf.gemm %x, %w bias %b residual %r activation gelu_erf {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<?x256xf32>) -> tensor<?x256xf32>
  // CHECK: xf.gemm %{{.*}}, %{{.*}} activation relu transpose_weight : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  %z = xf.gemm %x, %wt activation relu transpose_weight : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  return %y, %z : tensor<?x256xf32>, tensor<?x256xf32>
}

// Llama-family ops: SiLU, the elementwise product, rotary positions, and
// attention with grouped K/V heads (kv_heads) and rope options on xf.mha.
// CHECK-LABEL: func.func @llama_ops
func.func @llama_ops(%x: tensor<?x64xf32>, %q: tensor<?x64xf32>, %kv: tensor<?x32xf32>,
                     %wq: tensor<64x64xf32>, %wkv: tensor<32x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: xf.silu %{{.*}} : tensor<?x64xf32>
  %s = xf.silu %x : tensor<?x64xf32>
  // CHECK: xf.mul %{{.*}}, %{{.*}} : tensor<?x64xf32>
  %p = xf.mul %s, %x : tensor<?x64xf32>
  // CHECK: xf.rope adjacent heads 4 %{{.*}} base 1.000000e+05 : tensor<?x64xf32> -> tensor<?x64xf32>
  %r = xf.rope adjacent heads 4 %q base 1.0e5 : tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: xf.rope halves heads 2 %{{.*}} base 1.000000e+04 : tensor<?x32xf32> -> tensor<?x32xf32>
  %k = xf.rope halves heads 2 %kv base 1.0e4 : tensor<?x32xf32> -> tensor<?x32xf32>
  // CHECK: xf.attention causal heads 4 kv_heads 2 %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  %a = xf.attention causal heads 4 kv_heads 2 %r, %k, %kv : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  // CHECK: xf.mha causal heads 4 kv_heads 2 rope halves base 1.000000e+04 %{{.*}} q %{{.*}} k %{{.*}} v %{{.*}} o %{{.*}} transpose_weights
  %m = xf.mha causal heads 4 kv_heads 2 rope halves base 1.0e4 %x q %wq k %wkv v %wkv o %wq transpose_weights : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %p, %a, %m : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// A constant factor on every element (the spec's c · X, X / c).
// CHECK-LABEL: func.func @scale
func.func @scale(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // CHECK: xf.scale %{{.*}} by 1.250000e-01 : tensor<?x64xf32>
  %y = xf.scale %x by 0.125 : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// A factor known when the model runs: the spec's X / length(x).
// CHECK-LABEL: func.func @scale_by_length
func.func @scale_by_length(%x: tensor<?x64xf32>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  // CHECK: %[[N:.*]] = xf.length %{{.*}} : tensor<?xi32>
  %n = xf.length %ids : tensor<?xi32>
  %one = arith.constant 1.0 : f64
  // CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[N]] : f64
  %inv = arith.divf %one, %n : f64
  // CHECK: xf.scale %{{.*}} by 2.000000e+00 times %[[INV]] : tensor<?x64xf32>
  %y = xf.scale %x by 2.0 times %inv : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
