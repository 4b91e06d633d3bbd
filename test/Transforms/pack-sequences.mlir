// RUN: xf-opt %s --split-input-file --xf-pack-sequences | FileCheck %s
// RUN: xf-opt %s --split-input-file --xf-pack-sequences --xf-decompose-mha --xf-fuse-qkv \
// RUN:   --xf-fuse-rope-attention | FileCheck %s --check-prefix=FUSED

// A decoder with every op that sees whole sequences: @forward_packed takes
// the lengths and hands them to the positions, the ropes and the
// attention; row-wise ops and @forward stay as they are.
// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<?xi32>) -> tensor<?x16xf32>
// CHECK-NOT: segments
// CHECK: func.func @forward_packed(%[[X:.*]]: tensor<?xi32>, %[[N:.*]]: tensor<?xi64>) -> tensor<?x16xf32>
// CHECK: xf.token_embed %{{.*}}[%[[X]]]
// CHECK: xf.pos_embed %{{.*}} for %[[X]] segments %[[N]]
// CHECK: xf.sinusoidal_embed for %[[X]] segments %[[N]] base
// CHECK: xf.add
// CHECK: xf.rms_norm
// CHECK: xf.mha causal heads 2 rope halves base {{.*}} segments %[[N]] :
// CHECK: xf.linear
// CHECK: return
// After decomposition and fusion the ropes restart in each sequence and fold
// into the attention, which keeps the segments.
// FUSED-LABEL: func.func @forward_packed(
// FUSED-NOT: xf.rope
// FUSED: xf.attention causal heads 2 rope halves base 1.000000e+04 %{{.*}}, %{{.*}}, %{{.*}} segments %arg1 :
module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x16xf32> {
    %wte = xf.parameter "wte" : tensor<64x16xf32>
    %wpe = xf.parameter "wpe" : tensor<32x16xf32>
    %g = xf.parameter "g" : tensor<16xf32>
    %w = xf.parameter "w" : tensor<16x16xf32>
    %e = xf.token_embed %wte[%x] : tensor<64x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %p = xf.pos_embed %wpe for %x : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %s = xf.sinusoidal_embed for %x base 1.0e4 : tensor<?xi32> -> tensor<?x16xf32>
    %ep = xf.add %e, %p : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %h = xf.add %ep, %s : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %n = xf.rms_norm %h gamma %g eps 1.0e-5 : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    %y = xf.mha causal heads 2 rope halves base 1.0e4 %n q %w k %w v %w o %w : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    %o = xf.linear %y, %w : tensor<?x16xf32>, tensor<16x16xf32> -> tensor<?x16xf32>
    return %o : tensor<?x16xf32>
  }
}

// -----

// Rows that meet outside attention: no packed form (the runtime runs one
// sequence at a time). A product of two activations (Q·Kᵀ by hand):
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: @forward_packed
module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x?xf32> {
    %wte = xf.parameter "wte" : tensor<64x16xf32>
    %e = xf.token_embed %wte[%x] : tensor<64x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %s = xf.matmul %e, %e transpose_rhs : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x?xf32>
    return %s : tensor<?x?xf32>
  }
}

// -----

// the sequence's length, xf.length (a packed batch has n of them):
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: @forward_packed
module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x16xf32> {
    %wte = xf.parameter "wte" : tensor<64x16xf32>
    %e = xf.token_embed %wte[%x] : tensor<64x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %l = xf.length %x : tensor<?xi32>
    %y = xf.scale %e by 1.0 times %l : tensor<?x16xf32>
    return %y : tensor<?x16xf32>
  }
}

// -----

// a row of an activation (a classifier token):
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: @forward_packed
module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<16xf32> {
    %wte = xf.parameter "wte" : tensor<64x16xf32>
    %e = xf.token_embed %wte[%x] : tensor<64x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %r = xf.row %e[0] : tensor<?x16xf32> -> tensor<16xf32>
    return %r : tensor<16xf32>
  }
}

// -----

// An encoder-decoder: both sides packed, one lengths argument each; the
// encoder's ops take the sources' segments, the decoder's the targets', and
// cross attention both (target sequence i attends to source sequence i).
// CHECK: func.func @forward_packed(%[[Z:[^:]*]]: tensor<?xi32>, %[[X:[^:]*]]: tensor<?xi32>, %[[NZ:[^:]*]]: tensor<?xi64>, %[[NX:[^:]*]]: tensor<?xi64>)
// CHECK: xf.sinusoidal_embed for %[[Z]] segments %[[NZ]]
// CHECK: xf.mha bidirectional heads 2 {{.*}} segments %[[NZ]] :
// CHECK: xf.sinusoidal_embed for %[[X]] segments %[[NX]]
// CHECK: xf.mha causal heads 2 {{.*}} segments %[[NX]] :
// CHECK: xf.mha cross heads 2 {{.*}} segments %[[NX]] key_segments %[[NZ]] :
module {
  func.func @forward(%z: tensor<?xi32>, %x: tensor<?xi32>) -> tensor<?x16xf32> {
    %wte = xf.parameter "wte" : tensor<64x16xf32>
    %w = xf.parameter "w" : tensor<16x16xf32>
    %ez = xf.token_embed %wte[%z] : tensor<64x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %pz = xf.sinusoidal_embed for %z base 1.0e4 : tensor<?xi32> -> tensor<?x16xf32>
    %hz = xf.add %ez, %pz : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %enc = xf.mha bidirectional heads 2 %hz q %w k %w v %w o %w : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    %ex = xf.token_embed %wte[%x] : tensor<64x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %px = xf.sinusoidal_embed for %x base 1.0e4 : tensor<?xi32> -> tensor<?x16xf32>
    %hx = xf.add %ex, %px : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %dec = xf.mha causal heads 2 %hx q %w k %w v %w o %w : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    %y = xf.mha cross heads 2 %dec context %enc q %w k %w v %w o %w : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    return %y : tensor<?x16xf32>
  }
}

// -----

// Two sequences meeting outside cross attention (their rows added) cannot be
// packed.
// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xi32>) -> tensor<?x8xf32>
// CHECK-NOT: @forward_packed
module {
  func.func @forward(%z: tensor<?xi32>, %x: tensor<?xi32>) -> tensor<?x8xf32> {
    %wte = xf.parameter "wte" : tensor<64x8xf32>
    %ez = xf.token_embed %wte[%z] : tensor<64x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %ex = xf.token_embed %wte[%x] : tensor<64x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %y = xf.add %ex, %ez : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    return %y : tensor<?x8xf32>
  }
}
