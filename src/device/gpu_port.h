/* One GPU source, two compilers: gpu_runtime.cu is written against HIP
 * names; built by hipcc they are HIP itself, built by nvcc this header maps
 * the few the source uses to their CUDA twins. Log messages therefore name
 * the HIP call on both builds. NBR_GPU_BACKEND_FN / NBR_GPU_BACKEND_NAME
 * differ per build so both objects link into one library. */
#ifndef NBR_DEVICE_GPU_PORT_H
#define NBR_DEVICE_GPU_PORT_H

#if defined(__HIP__) || defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)

#include <hip/hip_runtime.h>

#define NBR_GPU_HIP 1
#define NBR_GPU_BACKEND_FN nbr_device_backend_hip
#define NBR_GPU_BACKEND_NAME "hip"

/* ROCm 6 renamed hipPointerAttribute_t::memoryType to type. */
#if HIP_VERSION_MAJOR >= 6
#define NBR_GPU_ATTR_TYPE(attr) ((attr).type)
#else
#define NBR_GPU_ATTR_TYPE(attr) ((attr).memoryType)
#endif
#define NBR_GPU_ATTR_IS_DEVICE(attr)                                           \
    (!(attr).isManaged && (NBR_GPU_ATTR_TYPE(attr) == hipMemoryTypeDevice ||   \
                           NBR_GPU_ATTR_TYPE(attr) == hipMemoryTypeArray))
#define NBR_GPU_ATTR_IS_MANAGED(attr) ((attr).isManaged != 0)

/* The allocation's number, never reused in this process. */
static inline hipError_t nbr_gpu_buffer_id(uint64_t *id, void *base)
{
    unsigned long long v = 0;
    hipError_t e = hipPointerGetAttribute(&v, HIP_POINTER_ATTRIBUTE_BUFFER_ID,
                                          (hipDeviceptr_t)base);
    *id = (uint64_t)v;
    return e;
}

#elif defined(__CUDACC__)

#include <cuda.h> /* driver types only: libcuda is never linked */
#include <cuda_runtime.h>

#define NBR_GPU_BACKEND_FN nbr_device_backend_cuda
#define NBR_GPU_BACKEND_NAME "cuda"

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaIpcMemHandle_t hipIpcMemHandle_t;
typedef cudaPointerAttributes hipPointerAttribute_t;

#define hipSuccess cudaSuccess
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorNotSupported cudaErrorNotSupported
#define hipErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipGetDevice cudaGetDevice
#define hipSetDevice cudaSetDevice
#define hipGetDeviceCount cudaGetDeviceCount
#define hipDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define hipDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define hipDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define hipPointerGetAttributes cudaPointerGetAttributes
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc cudaHostAlloc
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostFree cudaFreeHost
#define hipIpcGetMemHandle cudaIpcGetMemHandle
#define hipIpcOpenMemHandle cudaIpcOpenMemHandle
#define hipIpcCloseMemHandle cudaIpcCloseMemHandle
#define hipIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventQuery cudaEventQuery
#define hipEventSynchronize cudaEventSynchronize
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpyDefault cudaMemcpyDefault

#define NBR_GPU_ATTR_IS_DEVICE(attr) ((attr).type == cudaMemoryTypeDevice)
#define NBR_GPU_ATTR_IS_MANAGED(attr) ((attr).type == cudaMemoryTypeManaged)

/* Two driver calls the runtime API lacks (cuMemGetAddressRange,
 * cuPointerGetAttribute), reached through the runtime's entry-point lookup
 * so that libcuda need not be linked (it may be absent at build time).
 * NULL when the lookup fails. */
static inline void *nbr_cu_driver_entry(const char *name, int version)
{
    void *sym = NULL;
#if CUDART_VERSION >= 12000
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, &sym, version, cudaEnableDefault,
                                                     &found);
#else
    (void)version;
    cudaError_t e = cudaGetDriverEntryPoint(name, &sym, cudaEnableDefault, &found);
#endif
    int ok = e == cudaSuccess && found == cudaDriverEntryPointSuccess && sym;
#elif CUDART_VERSION >= 11030
    (void)version;
    cudaError_t e = cudaGetDriverEntryPoint(name, &sym, cudaEnableDefault);
    int ok = e == cudaSuccess && sym;
#else
    (void)name;
    (void)version;
    int ok = 0; /* no entry-point lookup before CUDA 11.3 */
#endif
    if (!ok) {
        (void)cudaGetLastError();
        return NULL;
    }
    return sym;
}

/* The entry point of name, looked up once (the same value in every thread). */
#define NBR_CU_DRIVER_FN(type, name, version)                                  \
    static type cached;                                                        \
    type fn = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);                      \
    if (!fn) {                                                                 \
        fn = (type)nbr_cu_driver_entry(name, version);                         \
        __atomic_store_n(&cached, fn, __ATOMIC_RELEASE);                       \
    }

typedef CUresult (*nbr_cu_mem_get_address_range_t)(CUdeviceptr *base, size_t *size,
                                                   CUdeviceptr ptr);
typedef CUresult (*nbr_cu_pointer_get_attribute_t)(void *data, CUpointer_attribute attribute,
                                                   CUdeviceptr ptr);

static inline cudaError_t hipMemGetAddressRange(void **base, size_t *size, void *ptr)
{
    NBR_CU_DRIVER_FN(nbr_cu_mem_get_address_range_t, "cuMemGetAddressRange", 3020)
    if (!fn)
        return cudaErrorNotSupported;
    CUdeviceptr b = 0;
    if (fn(&b, size, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS)
        return cudaErrorInvalidValue;
    *base = (void *)(uintptr_t)b;
    return cudaSuccess;
}

/* The allocation's number, never reused in this process. */
static inline cudaError_t nbr_gpu_buffer_id(uint64_t *id, void *base)
{
    NBR_CU_DRIVER_FN(nbr_cu_pointer_get_attribute_t, "cuPointerGetAttribute", 4000)
    unsigned long long v = 0;
    if (!fn)
        return cudaErrorNotSupported;
    if (fn(&v, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)(uintptr_t)base) != CUDA_SUCCESS)
        return cudaErrorInvalidValue;
    *id = (uint64_t)v;
    return cudaSuccess;
}

#else
#error "gpu_port.h: compile with hipcc (-x hip) or nvcc"
#endif

#endif
