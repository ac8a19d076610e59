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
mark_as_advanced(Slurm_INCLUDE_DIR Slurm_LIBRARY)
