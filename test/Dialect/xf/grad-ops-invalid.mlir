// RUN: xf-opt %s -split-input-file -verify-diagnostics

// One case per shape rule of the loss and backward ops.

func.func @cross_entropy_targets(%l: tensor<4x64xf32>, %t: tensor<3xi32>) {
  // expected-error @+1 {{one target per row: targets [3] has 3 on axis 0 but logits [4, 64] has 4 on axis 0}}
  %loss = xf.cross_entropy %l, %t : tensor<4x64xf32>, tensor<3xi32> -> tensor<f32>
  return
}

// -----

func.func @weight_grad_rows(%x: tensor<4x16xf32>, %dy: tensor<5x8xf32>) {
  // expected-error @+1 {{rows: input [4, 16] has 4 on axis 0 but grad [5, 8] has 5 on axis 0}}
  %dw = xf.weight_grad %x, %dy : tensor<4x16xf32>, tensor<5x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @weight_grad_layout(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>) {
  // expected-error @+1 {{K: result [16, 8] has 8 on axis 1 but input [?, 16] has 16 on axis 1}}
  %dw = xf.weight_grad %x, %dy transpose_result : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @weight_grad_dynamic(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>) {
  // expected-error @+1 {{needs a static result shape, got [?, 8]}}
  %dw = xf.weight_grad %x, %dy : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @layer_norm_grad_shape(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>) {
  // expected-error @+1 {{gradient: grad [?, 8] has 8 on axis 1 but input [?, 16] has 16 on axis 1}}
  %dx = xf.layer_norm_grad %x, %dy eps 1.0e-5 : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_grad_heads(%q: tensor<?x15xf32>, %dy: tensor<?x15xf32>) {
  // expected-error @+1 {{query [?, 15] does not split into 2 heads}}
  %dq, %dk, %dv = xf.attention_grad causal heads 2 %q, %q, %q, %dy : tensor<?x15xf32>, tensor<?x15xf32>, tensor<?x15xf32>, tensor<?x15xf32> -> tensor<?x15xf32>, tensor<?x15xf32>, tensor<?x15xf32>
  return
}

// -----

func.func @pos_embed_grad_rows(%dy: tensor<40x16xf32>) {
  // expected-error @+1 {{40 rows do not fit the table [32, 16]}}
  %d = xf.pos_embed_grad %dy : tensor<40x16xf32> -> tensor<32x16xf32>
  return
}

// -----

func.func @row_grad_outside(%dy: tensor<16xf32>) {
  // expected-error @+1 {{row 2 is outside result [2, 16]}}
  %d = xf.row_grad %dy row 2 : tensor<16xf32> -> tensor<2x16xf32>
  return
}

// -----

func.func @row_grad_width(%dy: tensor<8xf32>) {
  // expected-error @+1 {{row width}}
  %d = xf.row_grad %dy row 0 : tensor<8xf32> -> tensor<2x16xf32>
  return
}

// -----

func.func @slice_grad_outside(%dy: tensor<?x16xf32>) {
  // expected-error @+1 {{slice [40, 56) on axis 1 is outside result [?, 48]}}
  %d = xf.slice_grad %dy axis 1 offset 40 : tensor<?x16xf32> -> tensor<?x48xf32>
  return
}

// -----

func.func @silu_grad_shape(%x: tensor<?x16xf32>, %dy: tensor<?x8xf32>) {
  // expected-error @+1 {{gradient: grad [?, 8] has 8 on axis 1 but input [?, 16] has 16 on axis 1}}
  %dx = xf.silu_grad %x, %dy : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rms_norm_gamma_width(%x: tensor<?x16xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{gamma width: gamma [8] has 8 on axis 0 but input [?, 16] has 16 on axis 1}}
  %dx = xf.rms_norm_grad %x, %x gamma %g eps 1.0e-5 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_grad_kv_width(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>) {
  // expected-error @+1 {{H_kv·d_k of key: [?, 16] is not 1/2 of [?, 16]}}
  %dq, %dk, %dv = xf.attention_grad causal heads 2 kv_heads 1 %q, %k, %k, %q : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  return
}

// -----

func.func @rope_grad_width(%dy: tensor<?x12xf32>) {
  // expected-error @+1 {{grad [?, 12] must split into heads = 4 heads of a static, even width}}
  %dx = xf.rope_grad adjacent heads 4 %dy base 1.0e4 : tensor<?x12xf32> -> tensor<?x12xf32>
  return
}
