# tt_library(NAME DIRS dir... DEPS target...)
# A static library of every .cpp in the given directories (globbed, so adding a file needs no
# CMake edit), with the repository root as include path and our warning flags.
function(tt_library name)
  cmake_parse_arguments(ARG "" "" "DIRS;DEPS;EXCLUDE" ${ARGN})
  set(srcs)
  foreach(d ${ARG_DIRS})
    file(GLOB s CONFIGURE_DEPENDS ${d}/*.cpp)
    list(APPEND srcs ${s})
  endforeach()
  foreach(e ${ARG_EXCLUDE})
    list(FILTER srcs EXCLUDE REGEX "${e}")
  endforeach()
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE tt_warnings)
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# tt_test(NAME SOURCES src... DEPS target... [MPI_RANKS n...] [LABELS l...])
# A GoogleTest executable registered with CTest. With MPI_RANKS, one CTest entry per rank count,
# launched under mpirun (oversubscribed, root allowed: CI runs as root on a 2-core machine).
# Every test labelled `comm` joins the `comm_tests` target, which scripts/test.sh builds under
# ThreadSanitizer before `ctest --preset tsan` runs that label: a new comm test cannot be left unbuilt.
if(NOT TARGET comm_tests)
  add_custom_target(comm_tests)
endif()

function(tt_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;MPI_RANKS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  if("comm" IN_LIST ARG_LABELS)
    add_dependencies(comm_tests ${name})
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main tt_warnings)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(ARG_MPI_RANKS)
    foreach(np ${ARG_MPI_RANKS})
      add_test(NAME ${name}.np${np}
               COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe ${MPIEXEC_NUMPROC_FLAG} ${np}
                       $<TARGET_FILE:${name}>)
      set_tests_properties(${name}.np${np} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "mpi;${ARG_LABELS}"
                           ENVIRONMENT "OMPI_MCA_pml=ob1;OMPI_MCA_btl=self,vader,tcp;OMPI_MCA_rmaps_base_oversubscribe=1"
                           PROCESSORS ${np})
    endforeach()
  else()
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}"
                         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  endif()
endfunction()
