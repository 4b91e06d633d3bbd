# Writes OUTPUT, a C++ file defining the identities of xf's code generators: the SHA-256 of
# the Halide kernel generators' sources (KERNEL_SOURCES) and of the host code generator's
# (HOST_SOURCES), '|'-separated paths. Every object cache key holds them
# (compiler/lib/Pipelines/ObjectKeys.cpp), so objects compiled by an older generator are
# never reused. Run at build time: cmake -DOUTPUT=... -DKERNEL_SOURCES=... -DHOST_SOURCES=... -P
# File names, not paths, enter the digest, so two checkouts of one commit share a cache.

function(xf_digest_of_files result sources)
  string(REPLACE "|" ";" files "${sources}")
  list(SORT files)
  set(listing "")
  foreach(file IN LISTS files)
    file(SHA256 "${file}" digest)
    get_filename_component(name "${file}" NAME)
    string(APPEND listing "${name} ${digest}\n")
  endforeach()
  string(SHA256 digest "${listing}")
  set(${result} ${digest} PARENT_SCOPE)
endfunction()

xf_digest_of_files(kernel "${KERNEL_SOURCES}")
xf_digest_of_files(host "${HOST_SOURCES}")
file(WRITE "${OUTPUT}"
  "// Written at build time by cmake/CodeGeneratorIdentity.cmake.\n"
  "#include \"xf/Pipelines/ObjectKeys.h\"\n"
  "const char *const mlir::xf::kKernelGeneratorIdentity = \"${kernel}\";\n"
  "const char *const mlir::xf::kHostCodegenIdentity = \"${host}\";\n")
