# Shared build settings for airlock's targets.

# Warnings and include root for every airlock target: includes are written from the repo root.
function(airlock_target_defaults target)
  # -Wmismatched-new-delete: GCC 12 misreads Asio's coroutine frame allocator (a known false positive).
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Wno-mismatched-new-delete)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()

# A library made of every .cpp beside its CMakeLists (excluding tests); the glob is re-checked at
# build time so a new file needs no CMake edit.
function(airlock_library target)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  add_library(${target} STATIC ${sources})
  airlock_target_defaults(${target})
endfunction()

# One library per folder of a layer (mcp/protocol, service/gateway, …), made of the .cpp files in
# that folder and its subfolders; a folder with only headers gives an INTERFACE library. `deps` are
# the lower libraries it may use. Static libraries are linked dependents first, so a call that runs
# back up (a lower folder using a higher one) fails to link; tests/core/layering_test.cpp checks
# the includes against the same order.
function(airlock_folder_library target dir)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.cpp)
  if(sources)
    add_library(${target} STATIC ${sources})
    airlock_target_defaults(${target})
    target_link_libraries(${target} PUBLIC ${ARGN})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} INTERFACE ${ARGN})
  endif()
endfunction()
