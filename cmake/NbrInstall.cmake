# Installs the library and the drop-in, the header, a CMake package
# (find_package(nbrcoll) -> nbrcoll::nbrcoll, nbrcoll::mpi) and pkg-config
# files (nbrcoll, nbrcoll-mpi).
include(CMakePackageConfigHelpers)

install(TARGETS nbrcoll nbrcoll_mpi EXPORT nbrcollTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/nbrcoll.h ${PROJECT_SOURCE_DIR}/include/nbrcoll_mpi.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(NBR_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/nbrcoll)
install(EXPORT nbrcollTargets NAMESPACE nbrcoll:: DESTINATION ${NBR_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nbrcollConfig.cmake.in
  ${PROJECT_BINARY_DIR}/nbrcollConfig.cmake INSTALL_DESTINATION ${NBR_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nbrcollConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nbrcollConfig.cmake
  ${PROJECT_BINARY_DIR}/nbrcollConfigVersion.cmake DESTINATION ${NBR_CMAKE_DIR})

# Name the MPI's own pkg-config module when it has one (Open MPI: ompi-c,
# MPICH: mpich), so `pkg-config --cflags nbrcoll` finds mpi.h too: the
# module of the MPI built against (a Debian machine may have both).
if(NBR_MPI_FLAVOR STREQUAL "openmpi")
  pkg_search_module(NBR_PC_MPI QUIET ompi-c mpi)
elseif(NBR_MPI_FLAVOR STREQUAL "mpich")
  pkg_search_module(NBR_PC_MPI QUIET mpich)
endif()
set(NBR_PC_REQUIRES "${NBR_PC_MPI_MODULE_NAME}")
# Relocatable: the prefix is found from where the .pc file lies, so
# `cmake --install --prefix DIR` anywhere gives a working file.
file(RELATIVE_PATH NBR_PC_TO_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
string(REGEX REPLACE "/$" "" NBR_PC_TO_PREFIX "${NBR_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/nbrcoll.pc.in
  ${PROJECT_BINARY_DIR}/nbrcoll.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/nbrcoll-mpi.pc.in
  ${PROJECT_BINARY_DIR}/nbrcoll-mpi.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/nbrcoll.pc ${PROJECT_BINARY_DIR}/nbrcoll-mpi.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
