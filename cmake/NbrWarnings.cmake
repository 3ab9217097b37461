# Warning flags for every nbrcoll target: nbr_enable_warnings(<target>).
# GCC reads MPI's sentinel pointers as arrays of no elements: Open MPI's
# MPI_UNWEIGHTED ((int *)2) as an over-read, MPICH's MPI_STATUSES_IGNORE
# ((MPI_Status *)1) as an overflow. Each build drops the one warning its
# MPI's header sets off (NBR_MPI_FLAVOR, cmake/NbrMpi.cmake).
function(nbr_enable_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wshadow -Wno-unused-parameter>
    $<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes -Wmissing-prototypes>)
  nbr_mpi_sentinel_warnings(${target})
  if(NBR_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-Werror>)
  endif()
endfunction()

# nbr_mpi_sentinel_warnings(<target>): also for programs built without
# nbrcoll's warning set (the drop-in's plain MPI test programs).
function(nbr_mpi_sentinel_warnings target)
  if(NBR_MPI_FLAVOR STREQUAL "openmpi")
    target_compile_options(${target} PRIVATE $<$<C_COMPILER_ID:GNU>:-Wno-stringop-overread>)
  elseif(NBR_MPI_FLAVOR STREQUAL "mpich")
    target_compile_options(${target} PRIVATE $<$<C_COMPILER_ID:GNU>:-Wno-stringop-overflow>)
  endif()
endfunction()
