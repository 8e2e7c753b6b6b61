# SPDX-License-Identifier: MIT
# MPI for the project's own programs: sharded audits (`mpirun -np N latentaudit audit`,
# include/latentaudit/dist/, docs/distributed.md) and the mpi relay transport.
#
# LATENTAUDIT_MPI = AUTO (default: enable whenever find_package(MPI COMPONENTS CXX) finds an MPI,
# e.g. Debian's libopenmpi-dev, which scripts/install-deps.sh installs) | ON (fail if not found) |
# OFF. Result: LATENTAUDIT_HAS_MPI (TRUE/FALSE) and, when TRUE, the INTERFACE target
# latentaudit::mpi: MPI::MPI_CXX (mpi.h's include directory and libmpi) and
# LATENTAUDIT_HAVE_MPI=1; plus LATENTAUDIT_MPIEXEC (the mpiexec/mpirun program the MPI tests
# run). The MPI C++ bindings are not used (MPI's C API only), so OMPI_SKIP_MPICXX keeps Open MPI's
# deprecated C++ headers out. The target is the project's own (tests, CLI); it is not installed or
# exported: a user links their own MPI and includes the header-only dist/mpi_runtime.hpp (and
# dist/mpi_audit_ranks.hpp, the sharded audit's ranks over MPI).
set(LATENTAUDIT_MPI AUTO CACHE STRING "MPI (sharded audits, mpi relay transport): AUTO (when found), ON (required) or OFF")
set_property(CACHE LATENTAUDIT_MPI PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${LATENTAUDIT_MPI}" _la_mpi_mode)
if(NOT _la_mpi_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "LATENTAUDIT_MPI must be AUTO, ON or OFF (got '${LATENTAUDIT_MPI}')")
endif()

set(LATENTAUDIT_HAS_MPI FALSE)
set(LATENTAUDIT_MPIEXEC "")
if(NOT _la_mpi_mode STREQUAL "OFF")
  if(_la_mpi_mode STREQUAL "ON")
    find_package(MPI COMPONENTS CXX)
  else()
    find_package(MPI QUIET COMPONENTS CXX)
  endif()
  if(MPI_CXX_FOUND AND TARGET MPI::MPI_CXX)
    add_library(latentaudit_mpi INTERFACE)
    target_link_libraries(latentaudit_mpi INTERFACE MPI::MPI_CXX)
    target_compile_definitions(latentaudit_mpi INTERFACE LATENTAUDIT_HAVE_MPI=1 OMPI_SKIP_MPICXX=1
                               MPICH_SKIP_MPICXX=1)
    add_library(latentaudit::mpi ALIAS latentaudit_mpi)
    set(LATENTAUDIT_HAS_MPI TRUE)
    set(LATENTAUDIT_MPIEXEC "${MPIEXEC_EXECUTABLE}")
  endif()
endif()

if(LATENTAUDIT_HAS_MPI)
  message(STATUS "latentaudit: MPI ON (LATENTAUDIT_MPI=${_la_mpi_mode}): MPI ${MPI_CXX_VERSION}, "
                 "mpiexec ${LATENTAUDIT_MPIEXEC}")
elseif(_la_mpi_mode STREQUAL "ON")
  message(FATAL_ERROR "latentaudit: LATENTAUDIT_MPI=ON but find_package(MPI COMPONENTS CXX) found no MPI "
                      "(scripts/install-deps.sh installs libopenmpi-dev and openmpi-bin)")
elseif(_la_mpi_mode STREQUAL "AUTO")
  message(STATUS "latentaudit: MPI OFF (LATENTAUDIT_MPI=AUTO, find_package(MPI COMPONENTS CXX) found none; "
                 "scripts/install-deps.sh installs libopenmpi-dev and openmpi-bin)")
else()
  message(STATUS "latentaudit: MPI OFF (LATENTAUDIT_MPI=OFF)")
endif()
