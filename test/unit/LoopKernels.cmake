# The loop kernels' schedules (compiler/lib/Codegen/LoopKernels.cpp), run
# through MLIR's JIT. Included from test/unit/CMakeLists.txt.
if(TARGET xfPipelines)
  xf_add_unit_test(xf-loop-kernels-test
    SOURCES LoopKernelsTest.cpp
    LIBS xfPipelines MLIR LLVM)
endif()
