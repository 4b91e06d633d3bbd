# Unit tests of the Halide kernel generators (compiler/lib/Codegen/HalideKernels).
# Included from test/unit/CMakeLists.txt.
if(TARGET xfHalideKernels)
  xf_add_unit_test(xf-halide-kernels-test
    SOURCES HalideKernelsGemmTest.cpp HalideKernelsAttentionTest.cpp HalideKernelsApiTest.cpp
            HalideKernelsSegmentedAttentionTest.cpp
            HalideKernelsCudaTest.cpp
    LIBS xfHalideKernels)
endif()

# The GEMM benchmarks (test/bench, owned with these kernels). Remove this once
# test/CMakeLists.txt adds the bench directory itself.
if(TARGET xfHalideKernels AND NOT TARGET xf-bench-gemm)
  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/../bench ${CMAKE_BINARY_DIR}/test/bench)
endif()
