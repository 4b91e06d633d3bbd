# libFuzzer support shared by the fuzz targets (spec frontend, runtime loaders, tokenizers).
#   XF_HAVE_LIBFUZZER      whether the C++ compiler builds and links -fsanitize=fuzzer (clang)
#   xf_add_fuzzer(T SRC..) a libFuzzer executable instrumented with ASan and UBSan
include_guard(GLOBAL)
include(CheckCXXSourceCompiles)

set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=fuzzer)
check_cxx_source_compiles(
  "#include <cstddef>
   #include <cstdint>
   extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }"
  XF_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)

function(xf_add_fuzzer target)
  add_executable(${target} ${ARGN})
  set(flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            -fno-omit-frame-pointer -g)
  target_compile_options(${target} PRIVATE ${flags})
  target_link_options(${target} PRIVATE ${flags})
endfunction()
