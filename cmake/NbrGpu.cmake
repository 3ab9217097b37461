# Optional GPU toolchains. Each option is AUTO (use when found), ON (fail
# when missing) or OFF. A host-only build is always possible.
#
# Sets NBR_HAVE_HIP / NBR_HAVE_CUDA (runtime found: the topology probes use
# it), NBR_HAVE_ROCM_SMI, and the device backends built from
# src/device/gpu_runtime.cu: NBR_HAVE_HIP_BACKEND (hipcc, NBR_HIPCC,
# targets NBR_HIP_TARGETS) and NBR_HAVE_CUDA_BACKEND (the CUDA language).
include(CheckLanguage)

set(NBR_HAVE_HIP OFF)
set(NBR_HAVE_ROCM_SMI OFF)
set(NBR_HAVE_CUDA OFF)
set(NBR_HAVE_HIP_BACKEND OFF)
set(NBR_HAVE_CUDA_BACKEND OFF)
set(NBR_HIP_TARGETS "")

set(NBR_HIP_ARCHITECTURES "gfx90a;gfx942" CACHE STRING
    "AMD GPU targets of the HIP backend (hipcc --offload-arch); ones hipcc lacks are dropped")
set(NBR_CUDA_ARCHITECTURES "80;90" CACHE STRING
    "NVIDIA GPU targets of the CUDA backend (CUDA_ARCHITECTURES)")

# A backend that cannot be built: fatal when asked for with ON, else a
# warning and a build without it.
macro(nbr_gpu_backend_unavailable option text)
  if(${option} STREQUAL "ON")
    message(FATAL_ERROR "${option}=ON: ${text}")
  endif()
  message(WARNING "${text}")
endmacro()

if(NOT NBR_ENABLE_HIP STREQUAL "OFF")
  find_path(NBR_HIP_INCLUDE_DIR hip/hip_runtime_api.h
            PATHS /opt/rocm/include /usr/include)
  find_library(NBR_HIP_LIBRARY amdhip64 PATHS /opt/rocm/lib)
  if(NBR_HIP_INCLUDE_DIR AND NBR_HIP_LIBRARY)
    set(NBR_HAVE_HIP ON)
  elseif(NBR_ENABLE_HIP STREQUAL "ON")
    message(FATAL_ERROR "NBR_ENABLE_HIP=ON but HIP (hip/hip_runtime_api.h, libamdhip64) was not found")
  endif()
  find_path(NBR_ROCM_SMI_INCLUDE_DIR rocm_smi/rocm_smi.h PATHS /opt/rocm/include /usr/include)
  find_library(NBR_ROCM_SMI_LIBRARY rocm_smi64 PATHS /opt/rocm/lib)
  if(NBR_ROCM_SMI_INCLUDE_DIR AND NBR_ROCM_SMI_LIBRARY)
    set(NBR_HAVE_ROCM_SMI ON)
  endif()
endif()

# The HIP backend: hipcc compiles gpu_runtime.cu for every target it knows.
# hipcc versions differ in the targets they accept (Debian's 5.2 has gfx940
# but not gfx942), so each one is tried on a small kernel; the answers are
# kept until hipcc or the list changes.
if(NBR_HAVE_HIP)
  find_program(NBR_HIPCC hipcc PATHS /opt/rocm/bin)
  if(NOT NBR_HIPCC)
    nbr_gpu_backend_unavailable(NBR_ENABLE_HIP "HIP runtime found but no hipcc: no HIP backend")
  else()
    # hipcc (clang 15) leaves an empty directory in TMPDIR per compile:
    # give it one inside the build tree (src/CMakeLists.txt does the same)
    set(NBR_HIPCC_TMPDIR ${CMAKE_BINARY_DIR}/CMakeFiles/nbr_hipcc_tmp)
    file(MAKE_DIRECTORY ${NBR_HIPCC_TMPDIR})
    set(probe_key "${NBR_HIPCC}|${NBR_HIP_ARCHITECTURES}")
    if(NOT probe_key STREQUAL "${NBR_HIP_PROBE_KEY}")
      set(probe_dir ${CMAKE_BINARY_DIR}/CMakeFiles/nbr_hip_probe)
      file(WRITE ${probe_dir}/probe.hip
        "#include <hip/hip_runtime.h>\n__global__ void probe(int *p) { p[threadIdx.x] = 1; }\n")
      set(usable "")
      set(dropped "")
      foreach(arch IN LISTS NBR_HIP_ARCHITECTURES)
        execute_process(
          COMMAND ${CMAKE_COMMAND} -E env TMPDIR=${NBR_HIPCC_TMPDIR}
                  ${NBR_HIPCC} -x hip -fPIC --offload-arch=${arch} -c ${probe_dir}/probe.hip
                  -o ${probe_dir}/probe-${arch}.o
          RESULT_VARIABLE probe_result OUTPUT_QUIET ERROR_QUIET)
        if(probe_result EQUAL 0)
          list(APPEND usable ${arch})
        else()
          list(APPEND dropped ${arch})
        endif()
      endforeach()
      set(NBR_HIP_PROBE_KEY "${probe_key}" CACHE INTERNAL "hipcc and targets last probed")
      set(NBR_HIP_USABLE "${usable}" CACHE INTERNAL "targets hipcc accepted")
      set(NBR_HIP_DROPPED "${dropped}" CACHE INTERNAL "targets hipcc rejected")
    endif()
    if(NBR_HIP_USABLE)
      if(NBR_HIP_DROPPED)
        message(WARNING "${NBR_HIPCC} does not accept the HIP target(s) ${NBR_HIP_DROPPED} "
                        "of NBR_HIP_ARCHITECTURES; building for: ${NBR_HIP_USABLE}")
      endif()
      set(NBR_HIP_TARGETS "${NBR_HIP_USABLE}")
      set(NBR_HAVE_HIP_BACKEND ON)
    else()
      nbr_gpu_backend_unavailable(NBR_ENABLE_HIP
        "hipcc accepts none of NBR_HIP_ARCHITECTURES (${NBR_HIP_ARCHITECTURES}): no HIP backend")
    endif()
  endif()
endif()

if(NOT NBR_ENABLE_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(NBR_HAVE_CUDA ON)
  elseif(NBR_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "NBR_ENABLE_CUDA=ON but the CUDA toolkit was not found")
  endif()
endif()

# The CUDA backend: the same source through CMake's CUDA language. nvcc is
# often off PATH (/usr/local/cuda/bin): the language check is pointed at
# the toolkit's own when nothing else names one.
if(NBR_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    if(CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
      set(ENV{CUDACXX} "${CUDAToolkit_NVCC_EXECUTABLE}")
    elseif(EXISTS /usr/local/cuda/bin/nvcc)
      set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "${NBR_CUDA_ARCHITECTURES}")
    endif()
    # one CUDA runtime per process: the shared libcudart the topology probe
    # links (CUDA::cudart), not CMake's default static copy beside it
    if(NOT DEFINED CMAKE_CUDA_RUNTIME_LIBRARY)
      set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    endif()
    enable_language(CUDA)
    set(NBR_HAVE_CUDA_BACKEND ON)
  else()
    nbr_gpu_backend_unavailable(NBR_ENABLE_CUDA
      "no usable CUDA compiler (nvcc): no CUDA backend (the topology probe still uses the CUDA runtime)")
  endif()
endif()

# For the configure summary.
set(NBR_DEVICE_BACKENDS "")
if(NBR_HAVE_HIP_BACKEND)
  list(APPEND NBR_DEVICE_BACKENDS "hip (${NBR_HIP_TARGETS})")
endif()
if(NBR_HAVE_CUDA_BACKEND)
  list(APPEND NBR_DEVICE_BACKENDS "cuda (sm ${CMAKE_CUDA_ARCHITECTURES})")
endif()
if(NOT NBR_DEVICE_BACKENDS)
  set(NBR_DEVICE_BACKENDS "none")
endif()
string(REPLACE ";" ", " NBR_DEVICE_BACKENDS "${NBR_DEVICE_BACKENDS}")

# The two builds of a GPU source written against HIP names (gpu_port.h):
# the library's device backends and nbr_spmm's kernel both use them.
#
# nbr_hip_object(<target> <source> <object-var> [INCLUDES dir...] [DEPENDS file...])
# hipcc is not a CMake language here: a custom command builds the object
# with the flags CMake would have given (PIC, hidden symbols, warnings);
# <target> owns the command and <object-var> receives the object's path.
function(nbr_hip_object target source object_var)
  cmake_parse_arguments(ARG "" "" "INCLUDES;DEPENDS" ${ARGN})
  set(object ${CMAKE_CURRENT_BINARY_DIR}/${target}.o)
  set(flags -x hip -std=c++17 -O3 -fPIC -fvisibility=hidden -fno-exceptions -fno-rtti
    -Wall -Wextra -Wshadow -Wno-unused-parameter
    -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1)
  foreach(dir IN LISTS ARG_INCLUDES MPI_C_INCLUDE_DIRS)
    list(APPEND flags -I${dir})
  endforeach()
  foreach(arch IN LISTS NBR_HIP_TARGETS)
    list(APPEND flags --offload-arch=${arch})
  endforeach()
  if(NBR_WERROR)
    list(APPEND flags -Werror)
  endif()
  add_custom_command(OUTPUT ${object}
    COMMAND ${CMAKE_COMMAND} -E env TMPDIR=${NBR_HIPCC_TMPDIR}
            ${NBR_HIPCC} ${flags} -c ${source} -o ${object}
    DEPENDS ${source} ${ARG_DEPENDS}
    COMMENT "Building HIP object ${source} for ${NBR_HIP_TARGETS}"
    VERBATIM)
  add_custom_target(${target} DEPENDS ${object})
  set(${object_var} ${object} PARENT_SCOPE)
endfunction()

# nbr_cuda_object(<target> <source> [INCLUDES dir...]): an OBJECT library
# through CMake's CUDA language, with the same warnings and hidden symbols.
function(nbr_cuda_object target source)
  cmake_parse_arguments(ARG "" "" "INCLUDES" ${ARGN})
  add_library(${target} OBJECT ${source})
  target_include_directories(${target} PRIVATE ${ARG_INCLUDES} ${MPI_C_INCLUDE_DIRS})
  set_target_properties(${target} PROPERTIES
    CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
    CUDA_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE
    -Xcompiler=-fno-exceptions,-Wall,-Wextra,-Wshadow,-Wno-unused-parameter)
  if(NBR_WERROR)
    target_compile_options(${target} PRIVATE -Werror=all-warnings -Xcompiler=-Werror)
  endif()
endfunction()
