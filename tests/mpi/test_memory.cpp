#include "test_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "device/backend.h"
#include "nbrcoll.h"

namespace nbrtest {

TestMemory test_memory()
{
    const char *v = std::getenv("NBR_TEST_MEMORY");
    if (v && std::strcmp(v, "device") == 0)
        return TestMemory::Device;
    if (v && std::strcmp(v, "mixed") == 0)
        return TestMemory::Mixed;
    return TestMemory::Host;
}

const char *test_memory_name(TestMemory m)
{
    switch (m) {
    case TestMemory::Host: return "host";
    case TestMemory::Device: return "device";
    case TestMemory::Mixed: return "mixed";
    }
    return "?";
}

void *device_alloc(size_t bytes)
{
    void *p = nullptr;
    const int rc = nbr_mem_alloc(&p, bytes);
    EXPECT_EQ(rc, NBR_SUCCESS) << "nbr_mem_alloc(" << bytes << "): " << nbr_error_string(rc);
    return rc == NBR_SUCCESS ? p : nullptr;
}

void device_free(void *ptr)
{
    EXPECT_EQ(nbr_mem_free(ptr), NBR_SUCCESS);
}

void device_copy(void *dst, const void *src, size_t bytes)
{
    const int rc = nbr_mem_copy(dst, src, bytes);
    EXPECT_EQ(rc, NBR_SUCCESS) << "nbr_mem_copy(" << bytes << "): " << nbr_error_string(rc);
}

bool real_gpu_in_use(std::string *why)
{
    const nbr_device_backend_t *backend = nullptr;
    const int rc = nbr_device_current(&backend);
    if (rc != NBR_SUCCESS) {
        *why = std::string("NBR_DEVICE: ") + nbr_error_string(rc);
        return false;
    }
    if (!backend) {
        *why = "no GPU backend found a device (hip: needs /dev/kfd; cuda: needs a driver "
               "and a device)";
        return false;
    }
    if (std::strcmp(backend->name, "emulate") == 0) {
        *why = "NBR_DEVICE=emulate is the CPU emulation, not a GPU";
        return false;
    }
    return true;
}

}  // namespace nbrtest
