// The CUDA source of the node model, on injected runtime answers.
#include <nbrcoll.h>
extern "C" {
#include "topo/cuda_probe.h"
}

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

// A fake CUDA runtime: device d has PCI id pci[d]; access/atomics/rank per
// ordered device pair.
struct FakeCuda {
    std::vector<std::string> pci;
    std::vector<std::vector<int>> access, atomics, rank;
    int count_error = 0;

    static FakeCuda &of(void *c) { return *static_cast<FakeCuda *>(c); }
    static int count(void *c, int *n)
    {
        *n = (int)of(c).pci.size();
        return of(c).count_error;
    }
    static int pci_id(void *c, int d, char *id, int size)
    {
        snprintf(id, (size_t)size, "%s", of(c).pci[d].c_str());
        return 0;
    }
    static int attr(void *c, int a, int from, int to, int *v)
    {
        FakeCuda &f = of(c);
        *v = a == NBR_CUDA_P2P_ACCESS ? f.access[from][to]
             : a == NBR_CUDA_P2P_ATOMICS ? f.atomics[from][to] : f.rank[from][to];
        return 0;
    }
    static const char *text(void *, int) { return "fake driver missing"; }
    nbr_cuda_api_t api() { return {this, count, pci_id, attr, text}; }

    FakeCuda(std::vector<std::string> ids, int a, int t, int r)
        : pci(ids), access(ids.size(), std::vector<int>(ids.size(), a)),
          atomics(ids.size(), std::vector<int>(ids.size(), t)),
          rank(ids.size(), std::vector<int>(ids.size(), r))
    {
    }
};

struct Probe {
    nbr_node_model_t m{};
    char message[256] = "";
    ~Probe() { nbr_model_free(&m); }
    int run(FakeCuda &fake)
    {
        nbr_topo_thresholds_t th;
        nbr_topo_thresholds_default(&th);
        nbr_cuda_api_t api = fake.api();
        return nbr_model_from_cuda(&api, &th, &m, message, sizeof message);
    }
};

// CUDA's device order scrambled against PCI order, upper-case hex as CUDA writes it.
const std::vector<std::string> dgx_ids = {"0000:9D:00.0", "0000:1B:00.0", "0000:C3:00.0",
                                          "0000:43:00.0", "0000:DF:00.0", "0000:52:00.0",
                                          "0000:D1:00.0", "0000:61:00.0"};

TEST(CudaProbe, NvSwitchBoxMatchesTheStoredDgxModel)
{
    FakeCuda fake(dgx_ids, 1, 1, 0);
    Probe p;
    ASSERT_EQ(p.run(fake), NBR_SUCCESS) << p.message;
    nbr_node_model_t stored;
    char why[512];
    ASSERT_EQ(nbr_model_load((std::string(NBR_SOURCE_DIR) + "/topo/dgx-h100-8.topo").c_str(),
                             &stored, why, sizeof why), NBR_SUCCESS) << why;
    ASSERT_EQ(p.m.num_gpus, 8);
    for (int a = 0; a < 8; a++) {
        // ordered by PCI bus id, lower case: the stored model's order
        EXPECT_STREQ(p.m.gpus[a].pci_bus_id, stored.gpus[a].pci_bus_id) << "GPU " << a;
        EXPECT_EQ(nbr_model_peer(&p.m, a), -1);
        for (int b = 0; b < 8; b++) {
            EXPECT_EQ(NBR_TOPO_AT(&p.m, link_type, a, b), NBR_TOPO_AT(&stored, link_type, a, b));
            EXPECT_EQ(NBR_TOPO_AT(&p.m, hops, a, b), NBR_TOPO_AT(&stored, hops, a, b));
            EXPECT_EQ(NBR_TOPO_AT(&p.m, links, a, b), a == b ? 0 : 1) << "the runtime cannot count links";
        }
    }
    nbr_model_free(&stored);
}

TEST(CudaProbe, NoPeerAccessIsPcie)
{
    FakeCuda fake({"0000:01:00.0", "0000:02:00.0", "0000:81:00.0"}, 0, 0, 0);
    Probe p;
    ASSERT_EQ(p.run(fake), NBR_SUCCESS) << p.message;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            if (a == b)
                continue;
            EXPECT_EQ(NBR_TOPO_AT(&p.m, link_type, a, b), NBR_LINK_PCIE);
            EXPECT_EQ(NBR_TOPO_AT(&p.m, hops, a, b), 2);
            EXPECT_EQ(NBR_TOPO_AT(&p.m, links, a, b), 0);
        }
}

TEST(CudaProbe, OneSidedAnswersBecomeSymmetric)
{
    FakeCuda fake({"0000:01:00.0", "0000:02:00.0"}, 1, 1, 0);
    fake.atomics[1][0] = 0; // only 0 -> 1 reports native atomics
    fake.rank[0][1] = 3;
    Probe p;
    ASSERT_EQ(p.run(fake), NBR_SUCCESS) << p.message;
    EXPECT_EQ(NBR_TOPO_AT(&p.m, link_type, 0, 1), NBR_LINK_PCIE);
    EXPECT_EQ(NBR_TOPO_AT(&p.m, link_type, 1, 0), NBR_LINK_PCIE);
    EXPECT_EQ(NBR_TOPO_AT(&p.m, weight, 1, 0), 3);
}

TEST(CudaProbe, NoDriverIsACleanFallback)
{
    FakeCuda fake({"0000:01:00.0"}, 0, 0, 0);
    fake.count_error = 35;
    Probe p;
    EXPECT_EQ(p.run(fake), NBR_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(p.message).find("fake driver missing"), std::string::npos) << p.message;
}

TEST(CudaProbe, RealRuntimeWithoutAGpuFailsCleanly)
{
    nbr_cuda_api_t api;
    if (nbr_cuda_real_api(&api) != NBR_SUCCESS)
        GTEST_SKIP() << "built without CUDA";
    nbr_topo_thresholds_t th;
    nbr_topo_thresholds_default(&th);
    nbr_node_model_t m{};
    char message[256] = "";
    int rc = nbr_model_from_cuda(&api, &th, &m, message, sizeof message);
    if (rc == NBR_SUCCESS) { // a GPU machine: the model must be valid
        EXPECT_EQ(nbr_model_validate(&m, message, sizeof message), NBR_SUCCESS) << message;
        EXPECT_GT(m.num_gpus, 0);
        nbr_model_free(&m);
    } else {
        EXPECT_EQ(rc, NBR_ERR_UNSUPPORTED);
        EXPECT_NE(std::string(message), "");
    }
}

} // namespace
