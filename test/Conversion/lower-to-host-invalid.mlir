// xf-lower-to-host's errors: an op the fusion pipeline should have removed
// (located at the op), and a malformed option (weight storage's:
// Transforms/assign-weight-storage-invalid.mlir).
// RUN: xf-opt %s --split-input-file --verify-diagnostics --xf-lower-to-host

// RUN: not xf-opt %s --split-input-file --xf-lower-to-host=kv-cache-type=f8 2>&1 | FileCheck %s --check-prefix=KVTYPE
// RUN: not xf-opt %s --split-input-file "--xf-lower-to-host=cuda kv-cache-type=f16" 2>&1 | FileCheck %s --check-prefix=KVCUDA

// KVTYPE: lower-to-host-invalid.mlir:{{[0-9]+}}:{{[0-9]+}}: error: xf-lower-to-host: kv-cache-type 'f8': expected f32 or f16
// KVCUDA: error: xf-lower-to-host: kv-cache-type f16 is not supported with cuda

func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x4xf32> {
  %t = xf.parameter "t" : tensor<8x4xf32>
  %w = xf.parameter "w" : tensor<4x4xf32>
  %x = xf.token_embed %t[%tokens] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  // expected-error @below {{'xf.linear' reached host lowering; run the fusion pipeline first}}
  %y = xf.linear %x, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

func.func @forward(%tokens: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error @below {{@forward must return a computed activation}}
  return %tokens : tensor<?xi32>
}

// -----

// expected-error @below {{no func.func @forward to lower}}
module {
  func.func @other() {
    return
  }
}

// -----

// @forward_packed must be @forward with segments: an op that differs (here
// another attention mask) cannot share @forward's kernels and slots.
module attributes {xf.hyperparameters = {l_max = 16 : i64}, xf.model = "m"} {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x8xf32> {
    %t = xf.parameter "t" : tensor<16x8xf32>
    %w = xf.parameter "w" : tensor<8x8xf32>
    %x8 = xf.token_embed %t[%x] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %e = xf.gemm %x8, %w activation none : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
    %a = xf.attention causal heads 2 %e, %e, %e : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    return %a : tensor<?x8xf32>
  }
  func.func @forward_packed(%x: tensor<?xi32>, %n: tensor<?xi64>) -> tensor<?x8xf32> {
    %t = xf.parameter "t" : tensor<16x8xf32>
    %w = xf.parameter "w" : tensor<8x8xf32>
    %x8 = xf.token_embed %t[%x] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %e = xf.gemm %x8, %w activation none : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
    // expected-error @below {{@forward_packed differs from @forward here (not the same op on the same operands): the packed batch cannot share its kernels}}
    %a = xf.attention bidirectional heads 2 %e, %e, %e segments %n : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    return %a : tensor<?x8xf32>
  }
}

// -----

// An op of @forward_packed that sees whole sequences needs the segments.
module attributes {xf.hyperparameters = {l_max = 16 : i64}, xf.model = "m"} {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x8xf32> {
    %t = xf.parameter "t" : tensor<16x8xf32>
    %w = xf.parameter "w" : tensor<8x8xf32>
    %x8 = xf.token_embed %t[%x] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %e = xf.gemm %x8, %w activation none : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
    %a = xf.attention causal heads 2 %e, %e, %e : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    return %a : tensor<?x8xf32>
  }
  func.func @forward_packed(%x: tensor<?xi32>, %n: tensor<?xi64>) -> tensor<?x8xf32> {
    %t = xf.parameter "t" : tensor<16x8xf32>
    %w = xf.parameter "w" : tensor<8x8xf32>
    %x8 = xf.token_embed %t[%x] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %e = xf.gemm %x8, %w activation none : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
    // expected-error @below {{in @forward_packed this op needs the packed batch's segments (its rows are several sequences)}}
    %a = xf.attention causal heads 2 %e, %e, %e : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    return %a : tensor<?x8xf32>
  }
}
