// The AMD topology probes: the KFD sysfs reader on a fake Frontier tree, the
// rocm_smi probe on an injected answer table, the thresholds, and the ways
// both must fail cleanly (malformed trees, no tree, no GPU, no rocm_smi).
#include <nbrcoll.h>
extern "C" {
#include "topo/kfd.h"
#include "topo/probe.h"
#include "topo/rsmi.h"
#include "topo/topology.h"
}

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

const std::string source_dir = NBR_SOURCE_DIR;
const std::string frontier_tree = source_dir + "/tests/data/kfd-frontier";
const std::string frontier_file = source_dir + "/topo/frontier-mi250x.topo";

struct Model {
    nbr_node_model_t m{};
    char message[512] = "";
    ~Model() { nbr_model_free(&m); }
    int links(int a, int b) const { return NBR_TOPO_AT(&m, links, a, b); }
    int hops(int a, int b) const { return NBR_TOPO_AT(&m, hops, a, b); }
    int type(int a, int b) const { return NBR_TOPO_AT(&m, link_type, a, b); }
    int weight(int a, int b) const { return NBR_TOPO_AT(&m, weight, a, b); }
    double bandwidth(int a, int b) const { return NBR_TOPO_AT(&m, bandwidth, a, b); }
    std::string text() const
    {
        char *buffer = nullptr;
        size_t size = 0;
        FILE *out = open_memstream(&buffer, &size);
        nbr_model_write(&m, out);
        fclose(out);
        std::string result(buffer ? buffer : "");
        free(buffer);
        return result;
    }
};

nbr_topo_thresholds_t defaults()
{
    nbr_topo_thresholds_t th;
    nbr_topo_thresholds_default(&th);
    return th;
}

int from_kfd(const std::string &root, Model &x, const nbr_topo_thresholds_t &th = defaults())
{
    return nbr_model_from_kfd(root.c_str(), &th, &x.m, x.message, sizeof x.message);
}

// ---------------------------------------------------------------- Frontier
//
// One Frontier node as the probes see it (the same facts generate.sh wrote
// into the fake tree): GCD g sits on PCI bus kBus[g], NUMA domain kNuma[g];
// kLinks lists the xGMI link count of each directly linked GCD pair.

const unsigned kBus[8] = {0xc1, 0xc6, 0xc9, 0xce, 0xd1, 0xd6, 0xd9, 0xde};
const int kNuma[8] = {3, 3, 1, 1, 0, 0, 2, 2};
const int kLinks[][3] = {{0, 1, 4}, {2, 3, 4}, {4, 5, 4}, {6, 7, 4}, {0, 2, 1}, {0, 6, 2},
                         {1, 3, 1}, {1, 5, 1}, {2, 4, 2}, {3, 7, 1}, {4, 6, 1}, {5, 7, 1}};

int frontier_links(int a, int b)
{
    for (const auto &l : kLinks)
        if ((l[0] == a && l[1] == b) || (l[0] == b && l[1] == a))
            return l[2];
    return 0;
}

// Physical hops by Floyd-Warshall, independent of the library's search.
std::vector<std::vector<int>> frontier_hops()
{
    std::vector<std::vector<int>> d(8, std::vector<int>(8, 99));
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            d[a][b] = a == b ? 0 : frontier_links(a, b) > 0 ? 1 : 99;
    for (int k = 0; k < 8; k++)
        for (int a = 0; a < 8; a++)
            for (int b = 0; b < 8; b++)
                d[a][b] = std::min(d[a][b], d[a][k] + d[k][b]);
    return d;
}

// The facts the papers and the OLCF guide state, checked on any model that
// claims to be a Frontier node (model index = GCD: PCI order).
void expect_frontier(const Model &x, const char *who)
{
    ASSERT_EQ(x.m.num_gpus, 8) << who;
    EXPECT_EQ(x.m.num_numa, 4) << who;
    EXPECT_EQ(x.m.num_sockets, 1) << who;
    auto hops = frontier_hops();
    for (int a = 0; a < 8; a++) {
        char pci[NBR_PCI_ID_MAX];
        snprintf(pci, sizeof pci, "0000:%02x:00.0", kBus[a]);
        EXPECT_STREQ(x.m.gpus[a].pci_bus_id, pci) << who << ": GCD " << a;
        EXPECT_EQ(x.m.gpus[a].numa_node, kNuma[a]) << who << ": GCD " << a;
        EXPECT_EQ(x.m.gpus[a].package, a / 2) << who << ": GCD " << a;
        EXPECT_EQ(x.m.gpus[a].leader, a % 2 == 0) << who << ": GCD " << a;
        for (int b = 0; b < 8; b++) {
            if (a == b)
                continue;
            EXPECT_EQ(x.links(a, b), frontier_links(a, b)) << who << ": GCDs " << a << "," << b;
            EXPECT_EQ(x.hops(a, b), hops[a][b]) << who << ": GCDs " << a << "," << b;
            EXPECT_EQ(x.type(a, b), NBR_LINK_XGMI) << who << ": GCDs " << a << "," << b;
            EXPECT_EQ(x.weight(a, b), 15 * hops[a][b]) << who << ": GCDs " << a << "," << b;
            EXPECT_DOUBLE_EQ(x.bandwidth(a, b), 50.0 * frontier_links(a, b)) << who;
        }
    }
}

void expect_same_as_file(const Model &x, const char *who)
{
    Model file;
    ASSERT_EQ(nbr_model_load(frontier_file.c_str(), &file.m, file.message, sizeof file.message),
              NBR_SUCCESS)
        << file.message;
    EXPECT_TRUE(nbr_model_equal(&x.m, &file.m))
        << who << " differs from " << frontier_file << "\n--- " << who << ":\n"
        << x.text() << "--- file:\n"
        << file.text();
}

TEST(KfdProbe, FakeFrontierTreeGivesTheFrontierModel)
{
    Model x;
    ASSERT_EQ(from_kfd(frontier_tree, x), NBR_SUCCESS) << x.message;
    EXPECT_STREQ(x.m.source, "kfd");
    expect_frontier(x, "kfd");
    expect_same_as_file(x, "kfd");
}

// --------------------------------------------------------- rocm_smi table
//
// Answers as rocm_smi gives them on Frontier: every pair of the hive is
// "hops 1, XGMI" (not physical), bandwidth 0-0 for pairs not directly
// linked, weight 15 x physical hops. The rsmi device order is deliberately
// not the PCI order.

struct FakeRsmi {
    std::vector<int> gcd_of = {5, 2, 7, 0, 3, 6, 1, 4}; // rsmi index -> GCD
    std::vector<unsigned> bus = std::vector<unsigned>(kBus, kBus + 8);
    std::vector<int> numa = std::vector<int>(kNuma, kNuma + 8);
    std::map<std::pair<int, int>, int> links; // by GCD
    std::map<std::pair<int, int>, int> hops;  // physical, by GCD
    std::map<std::pair<int, int>, bool> xgmi; // rocm_smi's type, by GCD
    int init_status = 0, fail_weight_status = 0, fail_bandwidth_status = 0, fail_pci_status = 0;
    int inits = 0, shut_downs = 0;
    bool cpu_link_xgmi = true; // Frontier: the GPU-CPU links are Infinity Fabric
    // Fault sweep: the fail_at-th call of any kind (shut_down aside) fails.
    long calls = 0, fail_at = 0;
    bool failed_bandwidth = false; // it was rsmi_minmax_bandwidth_get
    bool fails() { return ++calls == fail_at; }

    FakeRsmi()
    {
        auto h = frontier_hops();
        for (int a = 0; a < 8; a++)
            for (int b = 0; b < 8; b++) {
                links[{a, b}] = frontier_links(a, b);
                hops[{a, b}] = h[a][b];
                xgmi[{a, b}] = true;
            }
    }
    int gcd(uint32_t dev) const { return gcd_of.at(dev); }

    static FakeRsmi *self(void *c) { return static_cast<FakeRsmi *>(c); }
    static int init(void *c)
    {
        if (self(c)->fails())
            return 8;
        self(c)->inits++;
        return self(c)->init_status;
    }
    static void shut_down(void *c) { self(c)->shut_downs++; }
    static int num_devices(void *c, uint32_t *n)
    {
        if (self(c)->fails())
            return 2;
        *n = (uint32_t)self(c)->gcd_of.size();
        return 0;
    }
    static int pci_id(void *c, uint32_t dev, uint64_t *bdfid)
    {
        if (self(c)->fails())
            return 2;
        if (self(c)->fail_pci_status)
            return self(c)->fail_pci_status;
        *bdfid = (uint64_t)self(c)->bus.at(self(c)->gcd(dev)) << 8;
        return 0;
    }
    static int numa_node(void *c, uint32_t dev, int32_t *numa)
    {
        if (self(c)->fails())
            return 2;
        *numa = self(c)->numa.at(self(c)->gcd(dev));
        return 0;
    }
    // rocm_smi: hops 1 / XGMI for every GPU-GPU xGMI io_link; otherwise 2
    // (same NUMA node) or 3 through the CPU, typed like the GPU-CPU link.
    static int link_type(void *c, uint32_t a, uint32_t b, uint64_t *hops, int *is_xgmi)
    {
        FakeRsmi *f = self(c);
        if (f->fails())
            return 2;
        if (f->xgmi[{f->gcd(a), f->gcd(b)}]) {
            *hops = 1;
            *is_xgmi = 1;
        } else {
            *hops = f->numa.at(f->gcd(a)) == f->numa.at(f->gcd(b)) ? 2 : 3;
            *is_xgmi = f->cpu_link_xgmi;
        }
        return 0;
    }
    static int link_weight(void *c, uint32_t a, uint32_t b, uint64_t *weight)
    {
        if (self(c)->fails())
            return 2;
        if (self(c)->fail_weight_status)
            return self(c)->fail_weight_status;
        *weight = 15 * (uint64_t)self(c)->hops[{self(c)->gcd(a), self(c)->gcd(b)}];
        return 0;
    }
    static int minmax(void *c, uint32_t a, uint32_t b, uint64_t *min_mbps, uint64_t *max_mbps)
    {
        if (self(c)->fails()) {
            self(c)->failed_bandwidth = true;
            return 2;
        }
        if (self(c)->fail_bandwidth_status)
            return self(c)->fail_bandwidth_status;
        int n = self(c)->links[{self(c)->gcd(a), self(c)->gcd(b)}];
        *min_mbps = n > 0 ? 50000 : 0;
        *max_mbps = 50000ull * (uint64_t)n;
        return 0;
    }
    static const char *status_string(void *, int status)
    {
        return status == 8 ? "RSMI_STATUS_INIT_ERROR: fake" : "fake rocm_smi failure";
    }

    nbr_rsmi_api_t api()
    {
        nbr_rsmi_api_t t{};
        t.context = this;
        t.init = init;
        t.shut_down = shut_down;
        t.num_devices = num_devices;
        t.pci_id = pci_id;
        t.numa_node = numa_node;
        t.link_type = link_type;
        t.link_weight = link_weight;
        t.minmax_bandwidth = minmax;
        t.status_string = status_string;
        return t;
    }
    int probe(Model &x, const nbr_topo_thresholds_t &th = defaults())
    {
        nbr_rsmi_api_t t = api();
        return nbr_model_from_rsmi(&t, &th, &x.m, x.message, sizeof x.message);
    }
};

TEST(RsmiProbe, InjectedFrontierAnswersGiveTheFrontierModel)
{
    FakeRsmi fake;
    Model x;
    ASSERT_EQ(fake.probe(x), NBR_SUCCESS) << x.message;
    EXPECT_STREQ(x.m.source, "rocm_smi");
    expect_frontier(x, "rocm_smi");
    expect_same_as_file(x, "rocm_smi");
    EXPECT_EQ(fake.inits, 1);
    EXPECT_EQ(fake.shut_downs, 1);
}

TEST(RsmiProbe, AgreesWithKfdOnTheSameNode)
{
    FakeRsmi fake;
    Model smi, kfd;
    ASSERT_EQ(fake.probe(smi), NBR_SUCCESS) << smi.message;
    ASSERT_EQ(from_kfd(frontier_tree, kfd), NBR_SUCCESS) << kfd.message;
    EXPECT_TRUE(nbr_model_equal(&smi.m, &kfd.m)) << "rocm_smi:\n" << smi.text() << "kfd:\n"
                                                  << kfd.text();
}

// The model index follows the PCI bus, whatever order rocm_smi numbers the
// devices in; nbr_rsmi_device_for_pci maps back.
TEST(RsmiProbe, DeviceOrderDoesNotChangeTheModel)
{
    FakeRsmi identity, scrambled;
    identity.gcd_of = {0, 1, 2, 3, 4, 5, 6, 7};
    scrambled.gcd_of = {7, 6, 5, 4, 3, 2, 1, 0};
    Model a, b;
    ASSERT_EQ(identity.probe(a), NBR_SUCCESS) << a.message;
    ASSERT_EQ(scrambled.probe(b), NBR_SUCCESS) << b.message;
    EXPECT_TRUE(nbr_model_equal(&a.m, &b.m));
}

TEST(RsmiProbe, DeviceForPciMapsBackToTheRsmiIndex)
{
    FakeRsmi fake; // rsmi index 1 is GCD 2, bus c9
    nbr_rsmi_api_t api = fake.api();
    uint32_t dev = 99;
    ASSERT_EQ(nbr_rsmi_device_for_pci(&api, "0000:c9:00.0", &dev), NBR_SUCCESS);
    EXPECT_EQ(dev, 1u);
    dev = 99;
    ASSERT_EQ(nbr_rsmi_device_for_pci(&api, "0000:C1:00.0", &dev), NBR_SUCCESS); // CUDA-style
    EXPECT_EQ(dev, 3u);
    dev = 99;
    ASSERT_EQ(nbr_rsmi_device_for_pci(&api, "de:00.0", &dev), NBR_SUCCESS); // no domain
    EXPECT_EQ(dev, 2u);
    EXPECT_EQ(nbr_rsmi_device_for_pci(&api, "0000:aa:00.0", &dev), NBR_ERR_ARG);
    EXPECT_EQ(nbr_rsmi_device_for_pci(&api, "zz", &dev), NBR_ERR_ARG);
    EXPECT_EQ(nbr_rsmi_device_for_pci(&api, "0000:c9:00.9", &dev), NBR_ERR_ARG);
    fake.fail_pci_status = 2;
    EXPECT_EQ(nbr_rsmi_device_for_pci(&api, "0000:c9:00.0", &dev), NBR_ERR_IO);
    fake.init_status = 8;
    EXPECT_EQ(nbr_rsmi_device_for_pci(&api, "0000:c9:00.0", &dev), NBR_ERR_UNSUPPORTED);
    EXPECT_EQ(fake.inits, fake.shut_downs + 1) << "every successful init is shut down";
}

TEST(RsmiProbe, BdfFormatAndParse)
{
    char text[NBR_PCI_ID_MAX];
    uint64_t bdfid = (uint64_t)0x12 << 32 | 0xc1 << 8 | 3 << 3 | 1;
    nbr_amd_format_bdf(bdfid, text, sizeof text);
    EXPECT_STREQ(text, "0012:c1:03.1");
    uint64_t back = 0;
    ASSERT_EQ(nbr_amd_parse_bdf(text, &back), NBR_SUCCESS);
    EXPECT_EQ(back, bdfid);
    // rocm_smi's reserved / partition bits (16..31) never reach the text.
    nbr_amd_format_bdf(bdfid | 0x70000000ull, text, sizeof text);
    EXPECT_STREQ(text, "0012:c1:03.1");
    EXPECT_EQ(nbr_amd_parse_bdf("0000:c1:00", &back), NBR_ERR_ARG);
    EXPECT_EQ(nbr_amd_parse_bdf("0000:c1:00.0x", &back), NBR_ERR_ARG);
    EXPECT_EQ(nbr_amd_parse_bdf("", &back), NBR_ERR_ARG);
}

// rocm_smi failing to start (no GPU, no driver) is "not present": the
// caller falls back, with rocm_smi's own words in the message.
TEST(RsmiProbe, InitFailureIsNotPresentWithRocmSmiText)
{
    FakeRsmi fake;
    fake.init_status = 8;
    Model x;
    EXPECT_EQ(fake.probe(x), NBR_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(x.message).find("RSMI_STATUS_INIT_ERROR: fake"), std::string::npos)
        << x.message;
    EXPECT_EQ(fake.shut_downs, 0) << "no shut down after a failed init";
    EXPECT_EQ(x.m.gpus, nullptr);
}

TEST(RsmiProbe, NoDeviceIsNotPresent)
{
    FakeRsmi fake;
    fake.gcd_of.clear();
    Model x;
    EXPECT_EQ(fake.probe(x), NBR_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(x.message).find("0 GPUs"), std::string::npos) << x.message;
    EXPECT_EQ(fake.inits, fake.shut_downs);
}

TEST(RsmiProbe, QueryFailureIsAnErrorAndShutsDown)
{
    FakeRsmi fake;
    fake.fail_weight_status = 3;
    Model x;
    EXPECT_EQ(fake.probe(x), NBR_ERR_IO);
    EXPECT_NE(std::string(x.message).find("rsmi_topo_get_link_weight"), std::string::npos)
        << x.message;
    EXPECT_NE(std::string(x.message).find("fake rocm_smi failure"), std::string::npos);
    EXPECT_EQ(fake.inits, 1);
    EXPECT_EQ(fake.shut_downs, 1);
}

// rocm_smi refusing bandwidth for a pair leaves it unknown, not fatal; with
// no bandwidth anywhere, weight 15 (one KFD xGMI hop) still marks the direct
// pairs with one link each.
TEST(RsmiProbe, NoBandwidthFallsBackToWeights)
{
    FakeRsmi fake;
    fake.fail_bandwidth_status = 2;
    Model x;
    ASSERT_EQ(fake.probe(x), NBR_SUCCESS) << x.message;
    auto hops = frontier_hops();
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            if (a != b) {
                EXPECT_EQ(x.links(a, b), hops[a][b] == 1 ? 1 : 0) << a << "," << b;
                EXPECT_EQ(x.hops(a, b), hops[a][b]) << a << "," << b;
                EXPECT_EQ(x.bandwidth(a, b), 0.0);
            }
    // One link per pair is below the default peer threshold: no packages.
    EXPECT_EQ(nbr_model_peer(&x.m, 0), -1);

    nbr_topo_thresholds_t th = defaults();
    th.xgmi_hop_weight = 0; // fallback off: no direct links known at all
    Model off;
    ASSERT_EQ(fake.probe(off, th), NBR_SUCCESS) << off.message;
    EXPECT_EQ(off.links(0, 1), 0);
    EXPECT_EQ(off.hops(0, 1), th.pcie_hops);
    EXPECT_EQ(off.type(0, 1), NBR_LINK_XGMI) << "still reachable over xGMI";
}

// Pairs rocm_smi reports through the CPU (hops 2+, typed XGMI on Frontier
// because the GPU-CPU link is) have no GPU-GPU xGMI path: PCIe type,
// pcie_hops hops.
TEST(RsmiProbe, PairsThroughTheHostArePcie)
{
    FakeRsmi fake;
    ASSERT_TRUE(fake.cpu_link_xgmi);
    for (int b = 0; b < 8; b++)
        if (b != 7) {
            fake.xgmi[{7, b}] = fake.xgmi[{b, 7}] = false;
            fake.links[{7, b}] = fake.links[{b, 7}] = 0;
        }
    nbr_topo_thresholds_t th = defaults();
    th.pcie_hops = 3;
    Model x;
    ASSERT_EQ(fake.probe(x, th), NBR_SUCCESS) << x.message;
    for (int b = 0; b < 7; b++) {
        EXPECT_EQ(x.type(7, b), NBR_LINK_PCIE) << b;
        EXPECT_EQ(x.hops(7, b), 3) << b;
        EXPECT_EQ(x.links(7, b), 0) << b;
    }
    EXPECT_EQ(nbr_model_peer(&x.m, 7), -1);
    EXPECT_EQ(nbr_model_peer(&x.m, 6), -1);
    EXPECT_EQ(nbr_model_peer(&x.m, 0), 1);
}

// Packages are mutual best partners: GPU 1 prefers GPU 2 (6 links) over
// GPU 0 (4 links), so GPU 0 stays alone although 4 links reach the
// threshold.
TEST(RsmiProbe, PackagesAreMutualBestPartners)
{
    FakeRsmi fake;
    fake.gcd_of = {0, 1, 2};
    fake.links[{0, 2}] = fake.links[{2, 0}] = 0;
    fake.links[{1, 2}] = fake.links[{2, 1}] = 6;
    fake.numa = {0, 0, 0};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            fake.hops[{a, b}] = a == b ? 0 : (a + b == 2 && a != 1) ? 2 : 1;
    Model x;
    ASSERT_EQ(fake.probe(x), NBR_SUCCESS) << x.message;
    EXPECT_EQ(nbr_model_peer(&x.m, 1), 2);
    EXPECT_EQ(nbr_model_peer(&x.m, 2), 1);
    EXPECT_EQ(nbr_model_peer(&x.m, 0), -1);
    EXPECT_EQ(x.m.gpus[0].leader, 1);
    EXPECT_EQ(x.m.gpus[1].leader, 1);
    EXPECT_EQ(x.m.gpus[2].leader, 0);
    EXPECT_EQ(x.m.num_numa, 1);
}

// ------------------------------------------------------------- thresholds

TEST(Thresholds, DefaultsAreDocumentedValues)
{
    nbr_topo_thresholds_t th = defaults();
    EXPECT_EQ(th.peer_min_links, 4);
    EXPECT_EQ(th.pcie_hops, 2);
    EXPECT_EQ(th.xgmi_hop_weight, 15);
    EXPECT_DOUBLE_EQ(th.mbps_per_gbps, 1000.0);
}

TEST(Thresholds, PeerThresholdDecidesPackages)
{
    nbr_topo_thresholds_t th = defaults();
    th.peer_min_links = 5; // above the 4 in-package links: no packages
    Model none;
    ASSERT_EQ(from_kfd(frontier_tree, none, th), NBR_SUCCESS) << none.message;
    for (int g = 0; g < 8; g++) {
        EXPECT_EQ(nbr_model_peer(&none.m, g), -1) << g;
        EXPECT_EQ(none.m.gpus[g].leader, 1) << g;
    }
    // Links and hops do not depend on the threshold.
    EXPECT_EQ(none.links(0, 1), 4);
    EXPECT_EQ(none.hops(0, 3), 2);

    // A low threshold still pairs each GCD with its best partner only.
    th.peer_min_links = 1;
    Model low;
    ASSERT_EQ(from_kfd(frontier_tree, low, th), NBR_SUCCESS) << low.message;
    for (int g = 0; g < 8; g++)
        EXPECT_EQ(nbr_model_peer(&low.m, g), g ^ 1) << g;

    FakeRsmi fake;
    th.peer_min_links = 5;
    Model smi;
    ASSERT_EQ(fake.probe(smi, th), NBR_SUCCESS) << smi.message;
    EXPECT_TRUE(nbr_model_equal(&smi.m, &none.m));
}

TEST(Thresholds, NonsenseIsRefusedWithAReason)
{
    nbr_topo_thresholds_t th = defaults();
    th.pcie_hops = 0;
    Model x;
    EXPECT_EQ(from_kfd(frontier_tree, x, th), NBR_ERR_ARG);
    EXPECT_NE(std::string(x.message).find("pcie_hops"), std::string::npos) << x.message;
    th = defaults();
    th.mbps_per_gbps = 0;
    FakeRsmi fake;
    Model y;
    EXPECT_EQ(fake.probe(y, th), NBR_ERR_ARG);
    EXPECT_NE(std::string(y.message).find("mbps_per_gbps"), std::string::npos) << y.message;
    EXPECT_EQ(fake.inits, fake.shut_downs);
}

TEST(Thresholds, BandwidthUnit)
{
    nbr_topo_thresholds_t th = defaults();
    th.mbps_per_gbps = 1024.0;
    Model x;
    ASSERT_EQ(from_kfd(frontier_tree, x, th), NBR_SUCCESS) << x.message;
    EXPECT_DOUBLE_EQ(x.bandwidth(0, 1), 200000.0 / 1024.0);
    EXPECT_DOUBLE_EQ(x.bandwidth(0, 3), 0.0) << "indirect pairs have no bandwidth";
}

// ---------------------------------------------------------- broken trees

// A private copy of the fake tree that a test may break.
struct TreeCopy {
    fs::path root;
    TreeCopy()
    {
        std::string pattern = (fs::temp_directory_path() / "nbr-kfd-XXXXXX").string();
        if (!mkdtemp(pattern.data()))
            throw std::runtime_error("mkdtemp " + pattern + " failed");
        root = pattern;
        fs::copy(frontier_tree + "/sys", root / "sys", fs::copy_options::recursive);
    }
    ~TreeCopy() { fs::remove_all(root); }
    fs::path node(int n) const
    {
        return root / "sys/class/kfd/kfd/topology/nodes" / std::to_string(n);
    }
    void replace(const fs::path &file, const std::string &from, const std::string &to)
    {
        std::ifstream in(file);
        std::stringstream text;
        text << in.rdbuf();
        std::string s = text.str();
        size_t at = s.find(from);
        ASSERT_NE(at, std::string::npos) << from << " not in " << file;
        s.replace(at, from.size(), to);
        std::ofstream(file, std::ios::trunc) << s;
    }
    int probe(Model &x) { return from_kfd(root.string(), x); }
};

TEST(KfdProbe, CopiedTreeStillWorks) // the harness itself
{
    TreeCopy tree;
    Model x;
    ASSERT_EQ(tree.probe(x), NBR_SUCCESS) << x.message;
    expect_frontier(x, "copy");
}

TEST(KfdProbe, MissingPropertiesFileIsAnIoError)
{
    TreeCopy tree;
    fs::remove(tree.node(6) / "properties");
    Model x;
    EXPECT_EQ(tree.probe(x), NBR_ERR_IO);
    EXPECT_NE(std::string(x.message).find("nodes/6/properties"), std::string::npos) << x.message;
    EXPECT_EQ(x.m.gpus, nullptr);
}

TEST(KfdProbe, MissingLinkPropertiesIsAnIoError)
{
    TreeCopy tree;
    fs::remove(tree.node(5) / "io_links/3/properties");
    Model x;
    EXPECT_EQ(tree.probe(x), NBR_ERR_IO);
    EXPECT_NE(std::string(x.message).find("io_links/3/properties"), std::string::npos) << x.message;
}

TEST(KfdProbe, GarbageValueIsMalformed)
{
    TreeCopy tree;
    tree.replace(tree.node(4) / "properties", "simd_count 440", "simd_count many");
    Model x;
    EXPECT_EQ(tree.probe(x), NBR_ERR_ARG);
    EXPECT_NE(std::string(x.message).find("simd_count"), std::string::npos) << x.message;
}

TEST(KfdProbe, TrailingGarbageAndOverflowAreMalformed)
{
    {
        TreeCopy tree;
        tree.replace(tree.node(7) / "io_links/2/properties", "weight ",
                     "weight 15abc\nold_weight ");
        Model x;
        EXPECT_EQ(tree.probe(x), NBR_ERR_ARG);
        EXPECT_NE(std::string(x.message).find("\"weight\""), std::string::npos) << x.message;
    }
    {
        TreeCopy tree;
        tree.replace(tree.node(7) / "io_links/2/properties", "max_bandwidth ",
                     "max_bandwidth 99999999999999999999999\nold ");
        Model x;
        EXPECT_EQ(tree.probe(x), NBR_ERR_ARG);
        EXPECT_NE(std::string(x.message).find("max_bandwidth"), std::string::npos) << x.message;
    }
}

TEST(KfdProbe, MissingKeyIsMalformed)
{
    TreeCopy tree;
    tree.replace(tree.node(9) / "properties", "location_id", "location_xx");
    Model x;
    EXPECT_EQ(tree.probe(x), NBR_ERR_ARG);
    EXPECT_NE(std::string(x.message).find("\"location_id\""), std::string::npos) << x.message;
}

TEST(KfdProbe, LinkToAnUnknownNodeIsMalformed)
{
    TreeCopy tree;
    tree.replace(tree.node(4) / "io_links/1/properties", "node_to 5", "node_to 55");
    Model x;
    EXPECT_EQ(tree.probe(x), NBR_ERR_ARG);
    EXPECT_NE(std::string(x.message).find("node 55"), std::string::npos) << x.message;
}

TEST(KfdProbe, LinkFromTheWrongNodeIsMalformed)
{
    TreeCopy tree;
    tree.replace(tree.node(4) / "io_links/1/properties", "node_from 4", "node_from 6");
    Model x;
    EXPECT_EQ(tree.probe(x), NBR_ERR_ARG);
    EXPECT_NE(std::string(x.message).find("node_from"), std::string::npos) << x.message;
}

// GPUs a device cgroup hides (amdkfd answers EPERM) are left out, like the
// ROCm thunk does. Root reads any file, so as root the probe runs in a child
// that has dropped to the unprivileged user nobody (65534).
TEST(KfdProbe, UnreadableGpuNodeIsLeftOut)
{
    TreeCopy tree;
    fs::permissions(tree.root, fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
    fs::permissions(tree.node(11) / "properties", fs::perms::none);
    auto check = [&tree]() -> std::string {
        Model x;
        if (tree.probe(x) != NBR_SUCCESS)
            return std::string("probe failed: ") + x.message;
        if (x.m.num_gpus != 7)
            return "expected 7 GPUs, got " + std::to_string(x.m.num_gpus);
        if (nbr_model_peer(&x.m, 6) != -1)
            return "GCD 7 was GCD 6's peer: GCD 6 must have none";
        if (nbr_model_peer(&x.m, 0) != 1)
            return "GCDs 0 and 1 must stay peers";
        return "";
    };
    if (geteuid() != 0) {
        EXPECT_EQ(check(), "");
        return;
    }
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) { /* no gtest in here: report through the pipe and exit */
        close(pipe_fds[0]);
        std::string why = setgid(65534) != 0 || setuid(65534) != 0 ? "cannot become nobody"
                                                                   : check();
        if (write(pipe_fds[1], why.data(), why.size()) < 0)
            _exit(2);
        _exit(why.empty() ? 0 : 1);
    }
    close(pipe_fds[1]);
    char buffer[512];
    ssize_t got = read(pipe_fds[0], buffer, sizeof buffer);
    close(pipe_fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "as nobody: " << std::string(buffer, got > 0 ? (size_t)got : 0);
}

// A GPU's NUMA domain is the CPU node of its lightest CPU link.
TEST(KfdProbe, NumaFromTheLightestCpuLink)
{
    TreeCopy tree;
    fs::create_directories(tree.node(4) / "io_links/8");
    std::ofstream(tree.node(4) / "io_links/8/properties")
        << "type 2\nnode_from 4\nnode_to 0\nweight 40\nmin_bandwidth 0\nmax_bandwidth 0\n";
    Model x;
    ASSERT_EQ(tree.probe(x), NBR_SUCCESS) << x.message;
    EXPECT_EQ(x.m.gpus[0].numa_node, 3);
    tree.replace(tree.node(4) / "io_links/8/properties", "weight 40", "weight 5");
    Model y;
    ASSERT_EQ(tree.probe(y), NBR_SUCCESS) << y.message;
    EXPECT_EQ(y.m.gpus[0].numa_node, 0);
}

// Only xGMI io_links count as direct links, whatever bandwidth a PCIe one
// reports.
TEST(KfdProbe, PcieLinksAreNotDirectLinks)
{
    TreeCopy tree;
    tree.replace(tree.node(5) / "io_links/3/properties", "type 11", "type 2"); // GCD 1 -> 3
    tree.replace(tree.node(7) / "io_links/2/properties", "type 11", "type 2"); // GCD 3 -> 1
    Model x;
    ASSERT_EQ(tree.probe(x), NBR_SUCCESS) << x.message;
    EXPECT_EQ(x.links(1, 3), 0);
    EXPECT_EQ(x.type(1, 3), NBR_LINK_PCIE);
    EXPECT_EQ(x.bandwidth(1, 3), 0.0);
    EXPECT_EQ(x.links(0, 1), 4);
}

// A link listed in one direction only still gives a symmetric model.
TEST(KfdProbe, OneWayLinkIsEnough)
{
    TreeCopy tree;
    // GCD 0 (node 4) -> GCD 6 (node 10) is io_links/6 of node 4: the model
    // reads pairs from the lower GCD first, so dropping this one tests the
    // fallback to GCD 6's link back.
    fs::remove_all(tree.node(4) / "io_links/6");
    Model x;
    ASSERT_EQ(tree.probe(x), NBR_SUCCESS) << x.message;
    EXPECT_EQ(x.links(0, 6), 2);
    EXPECT_EQ(x.links(6, 0), 2);
}

// ------------------------------------------------------------ not present

TEST(KfdProbe, NoTreeIsNotPresent)
{
    TreeCopy tree;
    fs::remove_all(tree.root / "sys");
    Model x;
    EXPECT_EQ(tree.probe(x), NBR_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(x.message).find("no KFD topology"), std::string::npos) << x.message;
    Model y;
    EXPECT_EQ(from_kfd("/nonexistent/nbrcoll", y), NBR_ERR_UNSUPPORTED) << y.message;
}

TEST(KfdProbe, TreeWithoutGpusIsNotPresent)
{
    TreeCopy tree;
    for (int n = 4; n < 12; n++)
        fs::remove_all(tree.node(n));
    Model x;
    EXPECT_EQ(tree.probe(x), NBR_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(x.message).find("no GPU"), std::string::npos) << x.message;
}

// This machine's own tree: a GPU node answers with a valid model, a machine
// without one says "not present"; nothing else, and no crash.
TEST(KfdProbe, RealRootAnswersCleanly)
{
    Model x;
    int rc = from_kfd("", x);
    if (rc == NBR_SUCCESS) {
        char message[256] = "";
        EXPECT_GT(x.m.num_gpus, 0);
        EXPECT_EQ(nbr_model_validate(&x.m, message, sizeof message), NBR_SUCCESS) << message;
    } else {
        EXPECT_EQ(rc, NBR_ERR_UNSUPPORTED) << x.message;
        EXPECT_STRNE(x.message, "");
    }
}

TEST(RsmiProbe, RealBackendAnswersCleanly)
{
    nbr_rsmi_api_t api;
    int rc = nbr_rsmi_real_api(&api);
    if (rc != NBR_SUCCESS) {
        EXPECT_EQ(rc, NBR_ERR_UNSUPPORTED) << "only a build without rocm_smi may refuse";
        EXPECT_EQ(api.init, nullptr);
    }
    // Also through a refused table: the probe must say "not present".
    nbr_topo_thresholds_t th = defaults();
    Model x;
    rc = nbr_model_from_rsmi(&api, &th, &x.m, x.message, sizeof x.message);
    if (rc == NBR_SUCCESS) {
        char message[256] = "";
        EXPECT_GT(x.m.num_gpus, 0);
        EXPECT_EQ(nbr_model_validate(&x.m, message, sizeof message), NBR_SUCCESS) << message;
    } else {
        EXPECT_EQ(rc, NBR_ERR_UNSUPPORTED) << x.message;
        EXPECT_STRNE(x.message, "");
        EXPECT_EQ(x.m.gpus, nullptr);
    }
}

// ------------------------------------------------------------ probe faults
//
// Every rocm_smi call the probe makes fails in turn (the N-th call of any
// kind, for every N a clean probe makes): the probe must return an error
// with rocm_smi's text and no model, except that a failed bandwidth query
// leaves that pair's bandwidth unknown (rocm_smi answers it only for some
// pairs) and the model stands; and it shuts down every rocm_smi it started
// (the sanitizer pass checks that nothing leaks).

TEST(ProbeFaults, EveryFailedRocmSmiCallEndsInAnError)
{
    long total = 0;
    {
        FakeRsmi clean;
        Model x;
        ASSERT_EQ(clean.probe(x), NBR_SUCCESS) << x.message;
        total = clean.calls;
    }
    ASSERT_GT(total, 8);
    long bandwidth = 0;
    for (long n = 1; n <= total; n++) {
        FakeRsmi f;
        f.fail_at = n;
        Model x;
        const int rc = f.probe(x);
        EXPECT_EQ(f.inits, f.shut_downs)
            << "call " << n << ": a started rocm_smi was not shut down";
        if (f.failed_bandwidth) {
            EXPECT_EQ(rc, NBR_SUCCESS) << "call " << n << " (bandwidth): " << x.message;
            EXPECT_NE(x.m.gpus, nullptr) << "call " << n << " (bandwidth): no model";
            bandwidth++;
            continue;
        }
        EXPECT_TRUE(rc == NBR_ERR_UNSUPPORTED || rc == NBR_ERR_IO)
            << "call " << n << " of " << total << " failed: " << nbr_error_string(rc);
        EXPECT_NE(std::string(x.message).find("fake"), std::string::npos)
            << "call " << n << ": rocm_smi's text is not in the message: " << x.message;
        EXPECT_EQ(x.m.gpus, nullptr) << "call " << n << ": a model came back with an error";
    }
    EXPECT_GT(bandwidth, 0);
    std::printf("[ probe    ] %ld rocm_smi calls, each failed in turn: %ld errors, %ld failed "
                "bandwidth queries left a model\n",
                total, total - bandwidth, bandwidth);
}

// Every file of the fake KFD tree goes missing in turn, then holds garbage:
// the probe returns an error that says why, or a model (some files are
// not needed); it never crashes or leaks (sanitizer pass).
TEST(ProbeFaults, EveryMissingOrBrokenKfdFileEndsInAnErrorOrAModel)
{
    const fs::path root = fs::temp_directory_path() /
                          ("nbr-kfd-faults-" + std::to_string(static_cast<long>(getpid())));
    fs::remove_all(root);
    fs::copy(frontier_tree, root, fs::copy_options::recursive);
    std::vector<fs::path> files;
    for (const auto &e : fs::recursive_directory_iterator(root))
        if (e.is_regular_file())
            files.push_back(e.path());
    ASSERT_GT(files.size(), 100u);
    long errors = 0, models = 0;
    for (const fs::path &file : files) {
        std::ifstream in(file, std::ios::binary);
        const std::string saved((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
        in.close();
        for (int how = 0; how < 2; how++) {
            if (how == 0) {
                fs::remove(file);
            } else {
                std::ofstream(file, std::ios::trunc) << "x y z\n-1\n";
            }
            Model x;
            const int rc = from_kfd(root.string(), x);
            const std::string what = file.string() + (how == 0 ? " missing" : " broken");
            if (rc == NBR_SUCCESS) {
                EXPECT_NE(x.m.gpus, nullptr) << what << ": success without a model";
                models++;
            } else {
                EXPECT_GT(std::strlen(x.message), 0u) << what << ": an error without a reason";
                errors++;
            }
            std::ofstream(file, std::ios::binary | std::ios::trunc) << saved;
        }
    }
    fs::remove_all(root);
    std::printf("[ probe    ] %zu KFD files, each missing then broken: %ld errors, %ld models\n",
                files.size(), errors, models);
}

// hwloc: every call of the probe that can fail (the topology's load
// included) fails in turn, as hwloc fails it. The CPU side is the probe's
// best effort: every time the GPU model still comes back whole, with
// socket and NUMA counts of at least one and every GPU's NUMA domain inside
// them, and the host place is this machine's or the stated fallback.
TEST(ProbeFaults, EveryFailedHwlocCallLeavesAModel)
{
    const nbr_probe_options_t options{nullptr, frontier_tree.c_str()};
    long total = 0;
    std::string clean_text;
    {
        nbr_probe_hwloc_fail_at(0);
        Model x;
        nbr_host_place_t place{};
        ASSERT_EQ(nbr_probe_node(&options, &x.m), NBR_SUCCESS);
        ASSERT_EQ(nbr_probe_host_place(&place), NBR_SUCCESS);
        total = nbr_probe_hwloc_calls();
        clean_text = x.text();
    }
    ASSERT_GT(total, 4);
    long degraded = 0, unplaced = 0;
    for (long n = 1; n <= total; n++) {
        nbr_probe_hwloc_fail_at(n);
        Model x;
        nbr_host_place_t place{};
        const std::string what = "hwloc call " + std::to_string(n) + " of " + std::to_string(total);
        ASSERT_EQ(nbr_probe_node(&options, &x.m), NBR_SUCCESS) << what;
        const int placed = nbr_probe_host_place(&place);
        EXPECT_EQ(x.m.num_gpus, 8) << what;
        EXPECT_GE(x.m.num_sockets, 1) << what;
        EXPECT_GE(x.m.num_numa, 1) << what;
        for (int g = 0; g < x.m.num_gpus; g++)
            EXPECT_LT(x.m.gpus[g].numa_node, x.m.num_numa) << what << ": GCD " << g;
        EXPECT_TRUE(placed == NBR_SUCCESS || placed == NBR_ERR_UNSUPPORTED) << what;
        EXPECT_GE(place.num_sockets, 1) << what;
        EXPECT_LT(place.socket, place.num_sockets) << what;
        EXPECT_LT(place.numa, place.num_numa) << what;
        degraded += x.text() != clean_text;
        unplaced += placed != NBR_SUCCESS;
    }
    nbr_probe_hwloc_fail_at(0);
    std::printf("[ probe    ] %ld hwloc calls, each failed in turn: always a model (%ld differ "
                "from the clean one), %ld host places fell back\n",
                total, degraded, unplaced);
}

} // namespace
