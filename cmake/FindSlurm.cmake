# Finds libslurm (Debian's libslurm-dev ships neither a CMake config nor a pkg-config file).
# Defines Slurm_FOUND and the imported target Slurm::slurm.
find_path(Slurm_INCLUDE_DIR NAMES slurm/slurm.h)
find_library(Slurm_LIBRARY NAMES slurm)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Slurm REQUIRED_VARS Slurm_LIBRARY Slurm_INCLUDE_DIR)
if(Slurm_FOUND AND NOT TARGET Slurm::slurm)
  add_library(Slurm::slurm UNKNOWN IMPORTED)
  set_target_properties(Slurm::slurm PROPERTIES
    IMPORTED_LOCATION "${Slurm_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Slurm_INCLUDE_DIR}")
endif()
# The libslurm API the build links (its soname's number: libslurm.so.38 for Slurm 22.05, 42 for
# 24.11), which the program compares with the slurm_api_version() of the library it loads.
if(Slurm_FOUND)
  file(REAL_PATH "${Slurm_LIBRARY}" _slurm_real)
  if(_slurm_real MATCHES "libslurm\\.so\\.([0-9]+)")
    set(Slurm_API_CURRENT ${CMAKE_MATCH_1})
  endif()
endif()
mark_as_advanced(Slurm_INCLUDE_DIR Slurm_LIBRARY)
