# Optional GPU toolchains. Each option is AUTO (use when found), ON (fail
# when missing) or OFF. A host-only build is always possible.
include(CheckLanguage)

set(NBR_HAVE_HIP OFF)
set(NBR_HAVE_ROCM_SMI OFF)
set(NBR_HAVE_CUDA OFF)

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

if(NOT NBR_ENABLE_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(NBR_HAVE_CUDA ON)
  elseif(NBR_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "NBR_ENABLE_CUDA=ON but the CUDA toolkit was not found")
  endif()
endif()
