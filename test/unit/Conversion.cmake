# Unit tests of the host lowering's analyses (compiler/lib/Conversion).
# Included from test/unit/CMakeLists.txt.
if(TARGET xfConversion)
  xf_add_unit_test(xf-conversion-test
    SOURCES PlacementTest.cpp CachePlanTest.cpp
    LIBS xfConversion MLIR LLVM)
endif()
