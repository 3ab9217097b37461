// The device backends: the GPU ones (src/device/gpu_runtime.cu, built by
// hipcc and by nvcc) on a real device, and the CPU emulation CI runs the
// device layer on, held to the same answers. Each test runs once per
// backend; it skips, saying why, where that backend is not compiled in or
// finds no device. Only the device-count test also runs without a GPU: it
// must answer quietly.
#include <nbrcoll.h>

#include "device/backend.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

// The backend named `name` when this build has it, else NULL. Told by the
// test's CMake which objects are linked in.
const nbr_device_backend_t *compiled(const std::string &name)
{
    if (name == "emulate")
        return nbr_device_backend_emulate();
#ifdef NBR_HAVE_HIP_BACKEND
    if (name == "hip")
        return nbr_device_backend_hip();
#endif
#ifdef NBR_HAVE_CUDA_BACKEND
    if (name == "cuda")
        return nbr_device_backend_cuda();
#endif
    return nullptr;
}

// Everything written to file descriptor 2 while fn runs.
template <typename Fn> std::string stderr_of(Fn fn)
{
    fflush(stderr);
    FILE *capture = tmpfile();
    if (!capture)
        return "(tmpfile failed)";
    int saved = dup(2);
    dup2(fileno(capture), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string text;
    rewind(capture);
    char buf[512];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, capture)) > 0)
        text.append(buf, got);
    fclose(capture);
    return text;
}

class GpuBackend : public ::testing::TestWithParam<std::string> {
  protected:
    const nbr_device_backend_t *be = nullptr;

    // Skips unless the backend is compiled in and has a device (through
    // NEED_DEVICE, which also leaves the test).
    void need_device()
    {
        be = compiled(GetParam());
        if (!be)
            GTEST_SKIP() << "the " << GetParam() << " backend is not compiled into this build";
        int count = 0;
        ASSERT_EQ(be->device_count(&count), NBR_SUCCESS);
        if (count == 0)
            GTEST_SKIP() << "the " << GetParam()
                         << " backend found no device on this machine (no GPU or no driver)";
    }

    void *dev_alloc(size_t bytes)
    {
        void *p = nullptr;
        EXPECT_EQ(be->mem_alloc(&p, bytes), NBR_SUCCESS);
        return p;
    }

    // Runs one batch to completion on a fresh stream.
    void run(const std::vector<nbr_copy_t> &copies)
    {
        nbr_dev_stream_t *s = nullptr;
        ASSERT_EQ(be->stream_create(&s), NBR_SUCCESS);
        uint64_t ticket = 0;
        ASSERT_EQ(be->copy(s, copies.data(), (int)copies.size(), &ticket), NBR_SUCCESS);
        EXPECT_EQ(ticket, 1u);
        ASSERT_EQ(be->synchronize(s), NBR_SUCCESS);
        be->stream_destroy(s);
    }
    void upload(void *dev, const std::vector<unsigned char> &host)
    {
        run({{dev, host.data(), host.size()}});
    }
    std::vector<unsigned char> download(const void *dev, size_t bytes)
    {
        std::vector<unsigned char> host(bytes);
        run({{host.data(), dev, bytes}});
        return host;
    }
};

#define NEED_DEVICE()                                                          \
    do {                                                                       \
        need_device();                                                         \
        if (IsSkipped() || HasFatalFailure())                                  \
            return;                                                            \
    } while (0)

std::vector<unsigned char> pattern(size_t bytes, unsigned seed)
{
    std::vector<unsigned char> v(bytes);
    for (size_t i = 0; i < bytes; i++)
        v[i] = (unsigned char)((i * 131 + seed * 7 + (i >> 8)) & 0xff);
    return v;
}

TEST_P(GpuBackend, DeviceCountIsQuietAndSucceeds)
{
    be = compiled(GetParam());
    if (!be)
        GTEST_SKIP() << "the " << GetParam() << " backend is not compiled into this build";
    int rc = -1, count = -1;
    std::string printed = stderr_of([&] { rc = be->device_count(&count); });
    EXPECT_EQ(rc, NBR_SUCCESS);
    EXPECT_GE(count, 0);
    EXPECT_EQ(printed, "") << "device_count printed to stderr";
    EXPECT_STREQ(be->name, GetParam().c_str());
}

TEST_P(GpuBackend, CurrentDeviceHasALowerCasePciId)
{
    NEED_DEVICE();
    int device = -1;
    char pci[64];
    ASSERT_EQ(be->current_device(&device, pci, sizeof pci), NBR_SUCCESS);
    EXPECT_GE(device, 0);
    if (GetParam() != "emulate") { // no bus to name
        EXPECT_GT(strlen(pci), 0u);
    }
    for (const char *c = pci; *c; c++)
        EXPECT_EQ(*c, (char)tolower((unsigned char)*c)) << pci;
}

// The CPU cannot load from device memory: MPI_Pack or a CPU loop on it
// crashes. The emulation must too, or CI would miss such code.
TEST_P(GpuBackend, DeviceMemoryIsNotHostMemory)
{
    NEED_DEVICE();
    // NBR_GPU_AWARE_MPI=1 lets the CPU into emulated device memory (MPI
    // runs there): allocate without it, whatever the caller's environment
    const char *aware = getenv("NBR_GPU_AWARE_MPI");
    const std::string saved = aware ? aware : "";
    unsetenv("NBR_GPU_AWARE_MPI");
    void *p = dev_alloc(4096);
    if (aware)
        setenv("NBR_GPU_AWARE_MPI", saved.c_str(), 1);
    ASSERT_NE(p, nullptr);
    EXPECT_DEATH(
        {
            volatile const char *c = static_cast<const char *>(p) + 100;
            fprintf(stderr, "read %d\n", *c);
        },
        "");
    EXPECT_EQ(be->mem_free(p), NBR_SUCCESS);
}

TEST_P(GpuBackend, PointerKinds)
{
    NEED_DEVICE();
    int current = -1;
    ASSERT_EQ(be->current_device(&current, nullptr, 0), NBR_SUCCESS);
    nbr_mem_kind_t kind;
    int device = 7;

    std::vector<char> heap(64);
    ASSERT_EQ(be->pointer_kind(heap.data(), &kind, &device), NBR_SUCCESS);
    EXPECT_EQ(kind, NBR_MEM_HOST);
    EXPECT_EQ(device, -1);

    char *dev = (char *)dev_alloc(1 << 16);
    ASSERT_NE(dev, nullptr);
    for (char *p : {dev, dev + 4097}) {
        ASSERT_EQ(be->pointer_kind(p, &kind, &device), NBR_SUCCESS);
        EXPECT_EQ(kind, NBR_MEM_DEVICE);
        EXPECT_EQ(device, current);
    }

    void *pinned = nullptr;
    ASSERT_EQ(be->host_alloc(&pinned, 4096), NBR_SUCCESS);
    ASSERT_EQ(be->pointer_kind(pinned, &kind, &device), NBR_SUCCESS);
    EXPECT_EQ(kind, NBR_MEM_HOST);
    EXPECT_EQ(device, -1);

    // a failed query must not linger as the runtime's last error
    ASSERT_EQ(be->pointer_kind(heap.data(), &kind, &device), NBR_SUCCESS);
    run({{dev, heap.data(), heap.size()}});

    EXPECT_EQ(be->host_free(pinned), NBR_SUCCESS);
    EXPECT_EQ(be->mem_free(dev), NBR_SUCCESS);
}

TEST_P(GpuBackend, IpcHandleOfAnInteriorPointerGivesItsOffset)
{
    NEED_DEVICE();
    char *dev = (char *)dev_alloc(1 << 20);
    ASSERT_NE(dev, nullptr);
    nbr_ipc_handle_t handle;
    size_t offset = 1, bytes = 0;
    uint64_t id = 0, id2 = 0;
    ASSERT_EQ(be->ipc_get(dev, &handle, &offset, &bytes, &id), NBR_SUCCESS);
    EXPECT_EQ(offset, 0u);
    EXPECT_GE(bytes, 1u << 20) << "the allocation's size";
    ASSERT_EQ(be->ipc_get(dev + 12345, &handle, &offset, &bytes, &id2), NBR_SUCCESS);
    EXPECT_EQ(offset, 12345u);
    EXPECT_GE(bytes, 1u << 20);
    EXPECT_EQ(id2, id) << "one allocation, one number";
    EXPECT_EQ(be->mem_free(dev), NBR_SUCCESS);
    // the next allocation, likely at the same addresses, gets a new number
    char *again = (char *)dev_alloc(1 << 20);
    ASSERT_NE(again, nullptr);
    ASSERT_EQ(be->ipc_get(again, &handle, &offset, &bytes, &id2), NBR_SUCCESS);
    EXPECT_NE(id2, id);
    EXPECT_EQ(be->mem_free(again), NBR_SUCCESS);
}

// Device-to-device copies (the kernel's path) of awkward sizes at every
// mix of alignments; bytes around each target must stay untouched.
TEST_P(GpuBackend, KernelCopiesAnySizeAndAlignment)
{
    NEED_DEVICE();
    const size_t sizes[] = {0, 1, 3, 17, 4096 + 7, (1u << 20) + 5};
    const size_t offsets[][2] = {{0, 0}, {16, 16}, {1, 0}, {0, 3}, {5, 5}, {8, 24},
                                 {4, 12}, {2, 6},  {7, 1}};
    const size_t slot = (1u << 20) + 64;
    std::vector<nbr_copy_t> copies;
    std::vector<size_t> dst_off, src_off;
    for (size_t s : sizes)
        for (auto &o : offsets) {
            copies.push_back({nullptr, nullptr, s});
            dst_off.push_back(o[0]);
            src_off.push_back(o[1]);
        }
    const size_t total = slot * copies.size();
    const auto src_host = pattern(total, 1);
    const std::vector<unsigned char> dst_init(total, 0xee);
    char *src = (char *)dev_alloc(total), *dst = (char *)dev_alloc(total);
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    upload(src, src_host);
    upload(dst, dst_init);

    auto expect = dst_init;
    for (size_t i = 0; i < copies.size(); i++) {
        size_t d = i * slot + dst_off[i], s = i * slot + src_off[i];
        copies[i].dst = dst + d;
        copies[i].src = src + s;
        memcpy(&expect[d], &src_host[s], copies[i].bytes);
    }
    run(copies);
    auto got = download(dst, total);
    for (size_t i = 0; i < copies.size(); i++) {
        size_t begin = i * slot, end = begin + slot;
        EXPECT_EQ(memcmp(&got[begin], &expect[begin], end - begin), 0)
            << "copy " << i << ": " << copies[i].bytes << " bytes, dst offset " << dst_off[i]
            << ", src offset " << src_off[i];
    }
    EXPECT_EQ(be->mem_free(src), NBR_SUCCESS);
    EXPECT_EQ(be->mem_free(dst), NBR_SUCCESS);
}

// More triples than one launch carries: a gather of 1000 pieces.
TEST_P(GpuBackend, BatchLargerThanOneLaunch)
{
    NEED_DEVICE();
    const int n = 1000;
    const size_t stride = 48;
    const auto src_host = pattern(n * stride, 2);
    char *src = (char *)dev_alloc(n * stride), *dst = (char *)dev_alloc(n * stride);
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    upload(src, src_host);
    upload(dst, std::vector<unsigned char>(n * stride, 0));
    std::vector<nbr_copy_t> copies;
    auto expect = std::vector<unsigned char>(n * stride, 0);
    for (int i = 0; i < n; i++) {
        size_t bytes = 1 + (size_t)(i % 40), from = (size_t)((i * 7) % n) * stride + i % 5;
        copies.push_back({dst + (size_t)i * stride + i % 3, src + from, bytes});
        memcpy(&expect[(size_t)i * stride + i % 3], &src_host[from], bytes);
    }
    run(copies);
    EXPECT_EQ(download(dst, n * stride), expect);
    EXPECT_EQ(be->mem_free(src), NBR_SUCCESS);
    EXPECT_EQ(be->mem_free(dst), NBR_SUCCESS);
}

// Host memory on either end (pageable and pinned) goes through the
// runtime's async copy in the same batch as kernel copies.
TEST_P(GpuBackend, MixedHostAndDeviceBatch)
{
    NEED_DEVICE();
    const size_t bytes = 100003;
    const auto in = pattern(bytes, 3);
    void *pinned = nullptr;
    ASSERT_EQ(be->host_alloc(&pinned, bytes), NBR_SUCCESS);
    char *a = (char *)dev_alloc(bytes), *b = (char *)dev_alloc(bytes);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    run({{a, in.data(), bytes}});
    std::vector<unsigned char> out(bytes);
    nbr_dev_stream_t *s = nullptr;
    ASSERT_EQ(be->stream_create(&s), NBR_SUCCESS);
    uint64_t t1 = 0, t2 = 0;
    nbr_copy_t first[] = {{b, a, bytes}};
    nbr_copy_t second[] = {{pinned, b, bytes}, {out.data(), a, bytes}};
    ASSERT_EQ(be->copy(s, first, 1, &t1), NBR_SUCCESS);
    ASSERT_EQ(be->copy(s, second, 2, &t2), NBR_SUCCESS);
    EXPECT_EQ(t1, 1u);
    EXPECT_EQ(t2, 2u);
    ASSERT_EQ(be->synchronize(s), NBR_SUCCESS);
    be->stream_destroy(s);
    EXPECT_EQ(memcmp(pinned, in.data(), bytes), 0);
    EXPECT_EQ(out, in);
    EXPECT_EQ(be->host_free(pinned), NBR_SUCCESS);
    EXPECT_EQ(be->mem_free(a), NBR_SUCCESS);
    EXPECT_EQ(be->mem_free(b), NBR_SUCCESS);
}

// Tickets count batches from 1, empty ones included; progress never runs
// ahead of what was issued and reaches it after synchronize, also when more
// batches are in flight than the event ring holds.
TEST_P(GpuBackend, TicketsProgressAndSynchronize)
{
    NEED_DEVICE();
    const size_t bytes = 1 << 22;
    char *a = (char *)dev_alloc(bytes), *b = (char *)dev_alloc(bytes);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    nbr_dev_stream_t *s = nullptr;
    ASSERT_EQ(be->stream_create(&s), NBR_SUCCESS);
    uint64_t done = 99, ticket = 0, last_done = 0;
    ASSERT_EQ(be->progress(s, &done), NBR_SUCCESS);
    EXPECT_EQ(done, 0u);
    ASSERT_EQ(be->copy(s, nullptr, 0, &ticket), NBR_SUCCESS);
    EXPECT_EQ(ticket, 1u);
    const uint64_t batches = 300;
    for (uint64_t i = 2; i <= batches; i++) {
        nbr_copy_t c = {i % 2 ? a : b, i % 2 ? b : a, bytes};
        ASSERT_EQ(be->copy(s, &c, 1, &ticket), NBR_SUCCESS);
        ASSERT_EQ(ticket, i);
        ASSERT_EQ(be->progress(s, &done), NBR_SUCCESS);
        ASSERT_LE(done, ticket);
        ASSERT_GE(done, last_done);
        last_done = done;
    }
    ASSERT_EQ(be->synchronize(s), NBR_SUCCESS);
    ASSERT_EQ(be->progress(s, &done), NBR_SUCCESS);
    EXPECT_EQ(done, batches);
    be->stream_destroy(s);
    EXPECT_EQ(be->mem_free(a), NBR_SUCCESS);
    EXPECT_EQ(be->mem_free(b), NBR_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuBackend, ::testing::Values("hip", "cuda", "emulate"),
                         [](const ::testing::TestParamInfo<std::string> &param) {
                             return param.param;
                         });

} // namespace
