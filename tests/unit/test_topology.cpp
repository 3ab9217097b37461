// The machine model: text format, validation, stored models and the facts
// the papers state about them.
#include <nbrcoll.h>
extern "C" {
#include "topo/locality.h"
#include "topo/topology.h"
}

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

std::string model_path(const char *file) { return std::string(NBR_SOURCE_DIR) + "/topo/" + file; }

struct Model {
    nbr_node_model_t m{};
    char message[512] = "";
    ~Model() { nbr_model_free(&m); }
    int load(const char *file) { return nbr_model_load(model_path(file).c_str(), &m, message, sizeof message); }
    int parse(const std::string &text) { return nbr_model_parse(text.c_str(), "test", &m, message, sizeof message); }
    int links(int a, int b) const { return NBR_TOPO_AT(&m, links, a, b); }
    int hops(int a, int b) const { return NBR_TOPO_AT(&m, hops, a, b); }
    int type(int a, int b) const { return NBR_TOPO_AT(&m, link_type, a, b); }
};

const char *shipped[] = {"frontier-mi250x.topo", "mi250-4gpu.topo", "mi300x-8.topo",
                         "dgx-h100-8.topo", "pcie-4gpu.topo"};

// dump -> load -> identical, for every shipped model.
TEST(StoredModels, ParseAndRoundTrip)
{
    for (const char *file : shipped) {
        Model original;
        ASSERT_EQ(original.load(file), NBR_SUCCESS) << file << ": " << original.message;
        char *text = nullptr;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);
        ASSERT_EQ(nbr_model_write(&original.m, out), NBR_SUCCESS);
        fclose(out);
        Model again;
        EXPECT_EQ(again.parse(text), NBR_SUCCESS) << file << ": " << again.message;
        EXPECT_TRUE(nbr_model_equal(&original.m, &again.m)) << file << " changed in a round trip";
        free(text);
    }
}

// In-package GCD pairs have 4 links, other pairs 1, 2 or none; peers and
// leaders follow the packages.
void expect_mi250_family(const Model &x, const char *file)
{
    ASSERT_EQ(x.m.num_gpus, 8) << file;
    for (int a = 0; a < 8; a++) {
        int peer = nbr_model_peer(&x.m, a);
        ASSERT_GE(peer, 0) << file << ": GCD " << a << " has no peer";
        EXPECT_EQ(x.links(a, peer), 4) << file << ": GCD " << a << " and its peer";
        EXPECT_EQ(x.hops(a, peer), 1);
        EXPECT_EQ(x.m.gpus[a].leader, a < peer) << file << ": the lower GCD of a package leads";
        for (int b = 0; b < 8; b++) {
            if (b != a && b != peer) {
                EXPECT_LE(x.links(a, b), 2) << file << ": GCDs " << a << "," << b;
            }
        }
    }
}

TEST(StoredModels, FrontierNode)
{
    Model x;
    ASSERT_EQ(x.load("frontier-mi250x.topo"), NBR_SUCCESS) << x.message;
    expect_mi250_family(x, "frontier");
    EXPECT_EQ(x.type(0, 1), NBR_LINK_XGMI);
}

// Which GPU a rank uses: NBR_GPU, else its runtime's current device found
// by PCI id in the model, else local rank modulo the GPU count.
TEST(Placement, CurrentDeviceByPciIdThenModulo)
{
    Model x;
    ASSERT_EQ(x.load("frontier-mi250x.topo"), NBR_SUCCESS) << x.message;
    const nbr_node_model_t *m = &x.m;
    ASSERT_EQ(m->num_gpus, 8);
    std::string third = m->gpus[3].pci_bus_id, upper = third;
    for (char &ch : upper)
        ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
    EXPECT_EQ(nbr_local_gpu(m, 6, -1, third.c_str()), 3);
    EXPECT_EQ(nbr_local_gpu(m, 6, -1, upper.c_str()), 3) << "runtimes may print upper case";
    EXPECT_EQ(nbr_local_gpu(m, 6, 5, third.c_str()), 5) << "NBR_GPU wins";
    EXPECT_EQ(nbr_local_gpu(m, 11, -1, "0000:ff:00.0"), 3) << "unknown device: modulo";
    EXPECT_EQ(nbr_local_gpu(m, 11, -1, ""), 3);
    EXPECT_EQ(nbr_local_gpu(m, 11, -1, nullptr), 3);
    nbr_node_model_t flat{};
    ASSERT_EQ(nbr_model_flat(&flat, 0), NBR_SUCCESS);
    EXPECT_EQ(nbr_local_gpu(&flat, 2, -1, third.c_str()), -1);
    nbr_model_free(&flat);
}

TEST(StoredModels, SeedPaperClusterANode)
{
    Model x;
    ASSERT_EQ(x.load("mi250-4gpu.topo"), NBR_SUCCESS) << x.message;
    expect_mi250_family(x, "mi250-4gpu");
    EXPECT_EQ(x.hops(0, 4), 1) << "paper: GCD 0 and 4 are one hop apart";
    EXPECT_EQ(x.hops(0, 2), 2) << "paper: GCD 0 and 2 are two hops apart";
}

TEST(StoredModels, Mi300xAllToAll)
{
    Model x;
    ASSERT_EQ(x.load("mi300x-8.topo"), NBR_SUCCESS) << x.message;
    ASSERT_EQ(x.m.num_gpus, 8);
    for (int a = 0; a < 8; a++) {
        EXPECT_EQ(nbr_model_peer(&x.m, a), -1) << "MI300X GPUs have no GCD peer";
        for (int b = 0; b < 8; b++) {
            if (a != b) {
                EXPECT_EQ(x.type(a, b), NBR_LINK_XGMI);
                EXPECT_EQ(x.hops(a, b), 1);
                EXPECT_GE(x.links(a, b), 1);
            }
        }
    }
}

TEST(StoredModels, DgxH100NvSwitch)
{
    Model x;
    ASSERT_EQ(x.load("dgx-h100-8.topo"), NBR_SUCCESS) << x.message;
    ASSERT_EQ(x.m.num_gpus, 8);
    for (int a = 0; a < 8; a++) {
        for (int b = 0; b < 8; b++) {
            if (a == b)
                continue;
            {
                EXPECT_EQ(x.type(a, b), NBR_LINK_NVLINK);
                EXPECT_EQ(x.hops(a, b), 1);
            }
        }
    }
}

TEST(StoredModels, PcieNoPeerLinks)
{
    Model x;
    ASSERT_EQ(x.load("pcie-4gpu.topo"), NBR_SUCCESS) << x.message;
    ASSERT_EQ(x.m.num_gpus, 4);
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < 4; b++) {
            if (a != b) {
                EXPECT_EQ(x.type(a, b), NBR_LINK_PCIE);
                EXPECT_EQ(x.links(a, b), 0);
            }
        }
    }
}

// A small valid file, then single-line breakages of it.
const std::string good =
    "nbrcoll-topology 1\n"      // 1
    "name two\n"                // 2
    "sockets 1\n"               // 3
    "numa 2\n"                  // 4
    "gpus 2\n"                  // 5
    "gpu 0 pci=0000:c1:00.0 numa=0 package=0 leader\n" // 6
    "gpu 1 pci=0000:c9:00.0 numa=1 package=0\n"        // 7
    "hops\n0 1\n1 0\n"          // 8-10
    "links\n0 4\n4 0\n"         // 11-13
    "link_type\nself xgmi\nxgmi self\n"; // 14-16

std::string replace_line(const std::string &text, int line, const std::string &with)
{
    size_t start = 0;
    for (int l = 1; l < line; l++)
        start = text.find('\n', start) + 1;
    size_t end = text.find('\n', start);
    return text.substr(0, start) + with + text.substr(end);
}

TEST(TopologyFile, GoodFileParses)
{
    Model x;
    ASSERT_EQ(x.parse(good), NBR_SUCCESS) << x.message;
    EXPECT_EQ(x.links(0, 1), 4);
    EXPECT_EQ(nbr_model_peer(&x.m, 0), 1);
    EXPECT_STREQ(x.m.gpus[1].pci_bus_id, "0000:c9:00.0");
}

TEST(TopologyFile, ErrorsNameTheLine)
{
    struct Case {
        int line;
        const char *with;
        const char *expect; // "line N" and this text must appear
    } cases[] = {
        {1, "nbrcoll-topology 2", "line 1: expected 'nbrcoll-topology 1'"},
        {3, "socket 1", "line 3: unknown key 'socket'"},
        {4, "numa -1", "line 4:"},
        {7, "gpu 1 pci=0000:c9:00.0 numa=1 package=0 colour=red", "line 7: gpu 1: unknown attribute"},
        {10, "1", "line 10: hops row 1: 1 values, 2 expected"},
        {12, "0 -4", "line 12:"},
        {13, "3 0", "line 13: links row 1 column 0 differs from row 0 column 1"},
        {15, "xgmi xgmi", "line 15: link_type row 0: the diagonal must be self"},
        {15, "self warp", "line 15: unknown link type 'warp'"},
        {9, "0 x", "line 9: 'x' is not an integer"},
    };
    for (const Case &c : cases) {
        Model x;
        std::string text = replace_line(good, c.line, c.with);
        EXPECT_NE(x.parse(text), NBR_SUCCESS) << "accepted with line " << c.line << " = " << c.with;
        EXPECT_NE(std::string(x.message).find(c.expect), std::string::npos)
            << "line " << c.line << " = '" << c.with << "': message was: " << x.message;
    }
}

TEST(TopologyFile, MissingPartsAreReported)
{
    Model a;
    EXPECT_NE(a.parse(good.substr(0, good.find("links"))), NBR_SUCCESS);
    EXPECT_NE(std::string(a.message).find("missing matrix 'links'"), std::string::npos) << a.message;
    Model b; // a matrix cut short at the end of the file
    EXPECT_NE(b.parse(good.substr(0, good.size() - std::string("xgmi self\n").size())), NBR_SUCCESS);
    EXPECT_NE(std::string(b.message).find("file ends after 1 of 2 rows"), std::string::npos) << b.message;
    Model c;
    EXPECT_NE(c.parse(replace_line(good, 7, "# gpu 1 removed")), NBR_SUCCESS);
    EXPECT_NE(std::string(c.message).find("1 gpu lines for 2 gpus"), std::string::npos) << c.message;
    Model d;
    EXPECT_NE(d.parse(""), NBR_SUCCESS);
    EXPECT_NE(std::string(d.message).find("empty file"), std::string::npos) << d.message;
    Model e; // two leaders in one package
    EXPECT_NE(e.parse(replace_line(good, 7, "gpu 1 pci=0000:c9:00.0 numa=1 package=0 leader")), NBR_SUCCESS);
    EXPECT_NE(std::string(e.message).find("leaders"), std::string::npos) << e.message;
}

TEST(TopologyFile, UnreadableFileIsAnIoError)
{
    Model x;
    EXPECT_EQ(nbr_model_load("/nonexistent/x.topo", &x.m, x.message, sizeof x.message), NBR_ERR_IO);
    EXPECT_NE(std::string(x.message).find("/nonexistent/x.topo"), std::string::npos);
}

TEST(Model, FlatModelIsValidAndLinkless)
{
    for (int n : {0, 1, 4}) {
        nbr_node_model_t m;
        ASSERT_EQ(nbr_model_flat(&m, n), NBR_SUCCESS);
        char message[256];
        EXPECT_EQ(nbr_model_validate(&m, message, sizeof message), NBR_SUCCESS) << message;
        for (int a = 0; a < n; a++) {
            EXPECT_EQ(nbr_model_peer(&m, a), -1);
            for (int b = 0; b < n; b++) {
                EXPECT_EQ(NBR_TOPO_AT(&m, links, a, b), 0);
            }
        }
        nbr_model_free(&m);
    }
}

TEST(Model, HopsFromLinksIsShortestPath)
{
    // A chain 0 - 1 - 2 and an isolated 3.
    nbr_node_model_t m;
    ASSERT_EQ(nbr_model_init(&m, 4), NBR_SUCCESS);
    NBR_TOPO_AT(&m, links, 0, 1) = NBR_TOPO_AT(&m, links, 1, 0) = 2;
    NBR_TOPO_AT(&m, links, 1, 2) = NBR_TOPO_AT(&m, links, 2, 1) = 1;
    nbr_model_hops_from_links(&m, 3);
    EXPECT_EQ(NBR_TOPO_AT(&m, hops, 0, 1), 1);
    EXPECT_EQ(NBR_TOPO_AT(&m, hops, 0, 2), 2);
    EXPECT_EQ(NBR_TOPO_AT(&m, hops, 2, 0), 2);
    EXPECT_EQ(NBR_TOPO_AT(&m, hops, 0, 3), 3);
    EXPECT_EQ(NBR_TOPO_AT(&m, link_type, 0, 3), NBR_LINK_PCIE);
    nbr_model_free(&m);
}

} // namespace
