# tern_test(NAME SOURCES a.cc b.cc LIBS x y [LABEL unit|integration]): a GoogleTest
# binary registered with CTest. Tests labelled "unit" (the default) also run under
# the sanitizers in CI; "integration" tests (whole models, reference scripts) run
# in the Release build only.
function(tern_test name)
  if(NOT TERN_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "LABEL" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL)
    set(T_LABEL unit)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  if(T_LABEL STREQUAL "unit")
    set_property(GLOBAL APPEND PROPERTY TERN_UNIT_TESTS ${name})
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS ${T_LABEL}
    ENVIRONMENT "TERN_SOURCE_DIR=${PROJECT_SOURCE_DIR};TERN_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()

# tern_benchmark(NAME SOURCES ... LIBS ...): a Google Benchmark binary (not run by CTest).
function(tern_benchmark name)
  if(NOT TERN_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(B "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${B_SOURCES})
  target_link_libraries(${name} PRIVATE ${B_LIBS} benchmark::benchmark)
endfunction()
