// Device buffers for the MPI tests. NBR_TEST_MEMORY picks what nbrcoll is
// handed: host (default), device (every buffer whose datatype has no gaps
// comes from nbr_mem_alloc) or mixed (each rank draws host or device per
// buffer and case). The reference MPI calls always use host memory.
#ifndef NBRCOLL_TESTS_MPI_TEST_MEMORY_H
#define NBRCOLL_TESTS_MPI_TEST_MEMORY_H

#include <cstddef>
#include <string>
#include <vector>

namespace nbrtest {

enum class TestMemory { Host, Device, Mixed };

TestMemory test_memory();
const char *test_memory_name(TestMemory m);

// nbr_mem_alloc / nbr_mem_free; records a gtest failure and returns nullptr
// when the allocation fails.
void *device_alloc(size_t bytes);
void device_free(void *ptr);

// Copies between host and device memory (either direction) and waits.
void device_copy(void *dst, const void *src, size_t bytes);

// What nbrcoll is handed for one host vector: the vector itself, or (with
// NBR_TEST_MEMORY=device) a device copy of it. to_device() before the call,
// to_host() after it.
template <typename T>
class Mirror {
  public:
    explicit Mirror(std::vector<T> &host) : host_(host)
    {
        if (test_memory() == TestMemory::Device)
            dev_ = static_cast<T *>(device_alloc((host.size() + 1) * sizeof(T)));
    }
    ~Mirror()
    {
        if (dev_)
            device_free(dev_);
    }
    Mirror(const Mirror &) = delete;
    Mirror &operator=(const Mirror &) = delete;
    T *ptr() { return dev_ ? dev_ : host_.data(); }
    void to_device()
    {
        if (dev_)
            device_copy(dev_, host_.data(), host_.size() * sizeof(T));
    }
    void to_host()
    {
        if (dev_)
            device_copy(host_.data(), dev_, host_.size() * sizeof(T));
    }

  private:
    std::vector<T> &host_;
    T *dev_ = nullptr;
};

// True when a real GPU backend (hip, cuda) is in use; otherwise why not.
bool real_gpu_in_use(std::string *why);

}  // namespace nbrtest

#endif
