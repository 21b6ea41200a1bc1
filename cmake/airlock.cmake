# Shared build settings for airlock's targets.

# Warnings and include root for every airlock target: includes are written from the repo root.
function(airlock_target_defaults target)
  # -Wmismatched-new-delete: GCC 12 misreads Asio's coroutine frame allocator (a known false positive).
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Wno-mismatched-new-delete)
  if(AIRLOCK_UNITY)
    # In a unity build every file but the first is an included file, and GCC then warns about
    # internal-linkage types in coroutine frames, which is harmless.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()

# Product libraries compile as unity builds (AIRLOCK_UNITY, on by default): a folder's files are
# compiled in batches of a few, so Boost's headers and templates are parsed and instantiated once
# per batch instead of once per file. This asks every file to keep its internal helpers' names
# unique within its folder; a clash is a compile error, not a silent merge. Tests stay one file
# per translation unit.
option(AIRLOCK_UNITY "compile product libraries as unity builds" ON)
function(airlock_unity target)
  if(AIRLOCK_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

# A library made of every .cpp beside its CMakeLists (excluding tests); the glob is re-checked at
# build time so a new file needs no CMake edit.
function(airlock_library target)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  add_library(${target} STATIC ${sources})
  airlock_target_defaults(${target})
  airlock_unity(${target})
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
    airlock_unity(${target})
    target_link_libraries(${target} PUBLIC ${ARGN})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} INTERFACE ${ARGN})
  endif()
endfunction()
