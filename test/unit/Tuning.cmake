# Unit tests of the auto-tuner (compiler/lib/Tuning): the search, the cost ledger, the paths,
# the final A/B's rule and the load warning, and the tuning database. Included from
# test/unit/CMakeLists.txt.
if(TARGET xfTuning)
  xf_add_unit_test(xf-tuning-test
    SOURCES TuningSearchTest.cpp TuningDatabaseTest.cpp TuningCostLedgerTest.cpp
            TuningPathsTest.cpp TuningPairedComparisonTest.cpp TuningGpuSpaceTest.cpp
            TuningGpuAttentionSpaceTest.cpp TuningGpuTimingArgumentsTest.cpp
    LIBS xfTuning)
endif()
