# Which MPI nbrcoll builds against, and how the tests drive its launcher.
#
# Two ways to pick the MPI (in a fresh build directory):
#   -DNBR_MPI=mpich | openmpi   the distribution's suffixed wrappers
#                               (Debian, Ubuntu: mpicc.mpich, mpiexec.mpich)
#   -DMPI_C_COMPILER=... -DMPIEXEC_EXECUTABLE=...   CMake's FindMPI route,
#                               for any other install (Cray: cc and srun)
# With neither, FindMPI takes the mpicc on PATH (Debian's alternative:
# Open MPI).
#
# Sets, after find_package(MPI):
#   NBR_MPI_FLAVOR       openmpi | mpich | other   (from mpi.h; Cray MPICH
#                                                  and Intel MPI are mpich)
#   NBR_MPIEXEC_FLAVOR   openmpi | mpich | other   (from mpiexec --version)
#   NBR_MPICH_BEFORE_4_1 an MPICH older than 4.1 (Debian 12's 4.0), whose
#                        persistent neighborhood requests and alltoallw the
#                        drop-in tests cannot take as the yardstick
#   NBR_MPIEXEC_OVERSUBSCRIBE  the launcher flags that start more ranks than
#                        cores (Open MPI refuses without --oversubscribe;
#                        MPICH's Hydra takes no such flag and needs none)
set(NBR_MPI "" CACHE STRING "MPI to build against: mpich, openmpi, or empty for FindMPI's choice")
set_property(CACHE NBR_MPI PROPERTY STRINGS "" mpich openmpi)

if(NBR_MPI)
  if(NOT NBR_MPI MATCHES "^(mpich|openmpi)$")
    message(FATAL_ERROR "NBR_MPI=${NBR_MPI}: use mpich or openmpi (or MPI_C_COMPILER for another MPI)")
  endif()
  find_program(NBR_MPI_CC NAMES mpicc.${NBR_MPI} NO_CACHE)
  find_program(NBR_MPI_EXEC NAMES mpiexec.${NBR_MPI} mpirun.${NBR_MPI} NO_CACHE)
  if(NOT NBR_MPI_CC OR NOT NBR_MPI_EXEC)
    message(FATAL_ERROR "NBR_MPI=${NBR_MPI}: no mpicc.${NBR_MPI} / mpiexec.${NBR_MPI} on PATH; "
                        "pass -DMPI_C_COMPILER=... -DMPIEXEC_EXECUTABLE=... instead")
  endif()
  set(MPI_C_COMPILER ${NBR_MPI_CC} CACHE FILEPATH "MPI C compiler wrapper" FORCE)
  set(MPIEXEC_EXECUTABLE ${NBR_MPI_EXEC} CACHE FILEPATH "MPI launcher" FORCE)
endif()

find_package(MPI REQUIRED COMPONENTS C)

include(CheckSymbolExists)
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
set(CMAKE_REQUIRED_QUIET ON)
check_symbol_exists(OPEN_MPI mpi.h NBR_MPI_IS_OPENMPI)
check_symbol_exists(MPICH_VERSION mpi.h NBR_MPI_IS_MPICH)
if(NBR_MPI_IS_MPICH)
  include(CheckCSourceCompiles)
  check_c_source_compiles("#include <mpi.h>
#if MPICH_NUMVERSION >= 40100000
#error 4.1 or later
#endif
int main(void) { return 0; }" NBR_MPICH_BEFORE_4_1)
endif()
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_QUIET)
if(NBR_MPI_IS_OPENMPI)
  set(NBR_MPI_FLAVOR openmpi)
elseif(NBR_MPI_IS_MPICH)
  set(NBR_MPI_FLAVOR mpich)
else()
  set(NBR_MPI_FLAVOR other)
endif()

set(NBR_MPIEXEC_FLAVOR other)
if(MPIEXEC_EXECUTABLE)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _nbr_mpiexec_version
                  ERROR_VARIABLE _nbr_mpiexec_version RESULT_VARIABLE _nbr_rc TIMEOUT 20)
  if(_nbr_mpiexec_version MATCHES "Open MPI|OpenRTE")
    set(NBR_MPIEXEC_FLAVOR openmpi)
  elseif(_nbr_mpiexec_version MATCHES "HYDRA")
    set(NBR_MPIEXEC_FLAVOR mpich)
  endif()
endif()
# Debian's /usr/bin/mpiexec follows the default alternative whatever mpicc
# was chosen: a library of one MPI under the launcher of the other starts
# every rank as a singleton.
if(NOT NBR_MPI_FLAVOR STREQUAL "other" AND NOT NBR_MPIEXEC_FLAVOR STREQUAL "other"
   AND NOT NBR_MPI_FLAVOR STREQUAL NBR_MPIEXEC_FLAVOR)
  message(FATAL_ERROR "mpi.h is ${NBR_MPI_FLAVOR}'s but MPIEXEC_EXECUTABLE (${MPIEXEC_EXECUTABLE}) "
                      "is ${NBR_MPIEXEC_FLAVOR}'s launcher: pass -DMPIEXEC_EXECUTABLE=... or "
                      "-DNBR_MPI=${NBR_MPI_FLAVOR}")
endif()

if(NBR_MPIEXEC_FLAVOR STREQUAL "openmpi")
  set(NBR_MPIEXEC_OVERSUBSCRIBE --oversubscribe)
else()
  set(NBR_MPIEXEC_OVERSUBSCRIBE "")
endif()
message(STATUS "nbrcoll: MPI ${NBR_MPI_FLAVOR} ${MPI_C_VERSION}, launcher ${MPIEXEC_EXECUTABLE}")
