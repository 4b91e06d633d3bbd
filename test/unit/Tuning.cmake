# Unit tests of the auto-tuner's search and tuning database
# (compiler/lib/Tuning). Included from test/unit/CMakeLists.txt.
if(TARGET xfTuning)
  xf_add_unit_test(xf-tuning-test
    SOURCES TuningSearchTest.cpp TuningDatabaseTest.cpp TuningCostLedgerTest.cpp
            TuningPathsTest.cpp
    LIBS xfTuning)
endif()
