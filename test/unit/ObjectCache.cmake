# Unit tests of the object cache and its keys (compiler/lib/Pipelines/ObjectCache.cpp,
# ObjectKeys.cpp). Included from test/unit/CMakeLists.txt.
if(TARGET xfObjectCache)
  xf_add_unit_test(xf-object-cache-test
    SOURCES ObjectCacheTest.cpp
    LIBS xfObjectCache)
endif()
