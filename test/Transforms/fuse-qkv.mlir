// RUN: xf-opt %s --xf-fuse-qkv | FileCheck %s

// GPT-2: W_q, W_k, W_v are consecutive column slices of c_attn; the fused
// GEMM uses c_attn itself and its bias, and attention reads column slices.
// CHECK-LABEL: func.func @slices_of_one_tensor
func.func @slices_of_one_tensor(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[W:.*]] = xf.parameter "c_attn.weight" : tensor<64x192xf32>
  // CHECK: %[[B:.*]] = xf.parameter "c_attn.bias" : tensor<192xf32>
  %w = xf.parameter "c_attn.weight" : tensor<64x192xf32>
  %b = xf.parameter "c_attn.bias" : tensor<192xf32>
  %wq = xf.slice %w axis 1 offset 0 : tensor<64x192xf32> -> tensor<64x64xf32>
  %wk = xf.slice %w axis 1 offset 64 : tensor<64x192xf32> -> tensor<64x64xf32>
  %wv = xf.slice %w axis 1 offset 128 : tensor<64x192xf32> -> tensor<64x64xf32>
  %bq = xf.slice %b axis 0 offset 0 : tensor<192xf32> -> tensor<64xf32>
  %bk = xf.slice %b axis 0 offset 64 : tensor<192xf32> -> tensor<64xf32>
  %bv = xf.slice %b axis 0 offset 128 : tensor<192xf32> -> tensor<64xf32>
  // CHECK: %[[QKV:.*]] = xf.linear %{{.*}}, %[[W]], %[[B]] : tensor<?x64xf32>, tensor<64x192xf32>, tensor<192xf32> -> tensor<?x192xf32>
  // CHECK: %[[Q:.*]] = xf.slice %[[QKV]] axis 1 offset 0 : tensor<?x192xf32> -> tensor<?x64xf32>
  // CHECK: %[[K:.*]] = xf.slice %[[QKV]] axis 1 offset 64 : tensor<?x192xf32> -> tensor<?x64xf32>
  // CHECK: %[[V:.*]] = xf.slice %[[QKV]] axis 1 offset 128 : tensor<?x192xf32> -> tensor<?x64xf32>
  // CHECK: xf.attention causal heads 4 %[[Q]], %[[K]], %[[V]]
  %q = xf.linear %x, %wq, %bq : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %k = xf.linear %x, %wk, %bk : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %v = xf.linear %x, %wv, %bv : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %a = xf.attention causal heads 4 %q, %k, %v : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// BERT: three nn.Linear weights [d_out, d_in] are concatenated along d_out.
// CHECK-LABEL: func.func @separate_weights
func.func @separate_weights(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>) {
  %wq = xf.parameter "q.weight" : tensor<64x64xf32>
  %wk = xf.parameter "k.weight" : tensor<64x64xf32>
  %wv = xf.parameter "v.weight" : tensor<32x64xf32>
  // CHECK: %[[W:.*]] = xf.concat %{{.*}}, %{{.*}}, %{{.*}} axis 0 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<32x64xf32> -> tensor<160x64xf32>
  // CHECK: %[[QKV:.*]] = xf.linear %{{.*}}, %[[W]] transpose_weight : tensor<?x64xf32>, tensor<160x64xf32> -> tensor<?x160xf32>
  // CHECK: xf.slice %[[QKV]] axis 1 offset 0 : tensor<?x160xf32> -> tensor<?x64xf32>
  // CHECK: xf.slice %[[QKV]] axis 1 offset 64 : tensor<?x160xf32> -> tensor<?x64xf32>
  // CHECK: xf.slice %[[QKV]] axis 1 offset 128 : tensor<?x160xf32> -> tensor<?x32xf32>
  %q = xf.linear %x, %wq transpose_weight : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %k = xf.linear %x, %wk transpose_weight : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %v = xf.linear %x, %wv transpose_weight : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  return %q, %k, %v : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>
}

// Different inputs, different layouts, or bias on only one: nothing to fuse.
// CHECK-LABEL: func.func @not_fusable
func.func @not_fusable(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK-COUNT-4: xf.linear
  // CHECK-NOT: xf.slice
  %a = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %c = xf.linear %y, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %d = xf.linear %y, %w transpose_weight : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %e = xf.linear %x, %w, %b transpose_weight : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %a, %c, %d, %e : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// GeGLU (Gemma): the gate's projection feeds gelu, which fuses into its own GEMM's epilogue
// and has no kernel for a column slice; the up projection has no sibling left: two linears.
// CHECK-LABEL: func.func @geglu_keeps_two_gemms
func.func @geglu_keeps_two_gemms(%x: tensor<?x64xf32>, %wg: tensor<64x128xf32>, %wu: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // CHECK-COUNT-2: xf.linear
  // CHECK-NOT: xf.slice
  %g = xf.linear %x, %wg : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  %u = xf.linear %x, %wu : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  %a = xf.gelu tanh %g : tensor<?x128xf32>
  %y = xf.mul %a, %u : tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}
