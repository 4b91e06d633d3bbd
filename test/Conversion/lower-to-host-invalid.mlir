// xf-lower-to-host's errors: an op the fusion pipeline should have removed
// (located at the op), and a malformed option.
// RUN: xf-opt %s --split-input-file --verify-diagnostics --xf-lower-to-host
// RUN: not xf-opt %s --split-input-file --xf-lower-to-host=weight-blocks=w=q5_0 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: error: xf-lower-to-host: weight-blocks entry 'w=q5_0': expected NAME=q8_0, q4_0 or q4_1

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
