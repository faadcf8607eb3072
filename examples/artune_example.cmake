# What both example pairs' CMakeLists.txt share: find the installed transport (its
# CMake package) and build each program of the pair from PROGRAM.cc against it.
# -DARTUNE_EXAMPLES_STATIC=ON links the static library instead of the shared one.
option(ARTUNE_EXAMPLES_STATIC "Link libartune_transport.a" OFF)
if(ARTUNE_EXAMPLES_STATIC)
  find_package(ArtuneTransport 0.1 CONFIG REQUIRED COMPONENTS static)
  set(artune_transport_target artune::transport_static)
else()
  find_package(ArtuneTransport 0.1 CONFIG REQUIRED)
  set(artune_transport_target artune::transport)
endif()

function(artune_example_programs)
  foreach(program ${ARGN})
    add_executable(${program} ${program}.cc)
    target_link_libraries(${program} PRIVATE ${artune_transport_target})
  endforeach()
endfunction()
