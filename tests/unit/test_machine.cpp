// Machine parameter files: the format, its errors, the stored files.
#include <nbrcoll.h>

extern "C" {
#include "topo/machine.h"
}

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

const char *const full =
    "# a comment\n"
    "nbrcoll-machine 1\n"
    "name test-machine   # trailing comment\n"
    "path copy    alpha_us=0.5 gbytes_per_s=10\n"
    "path device  gbytes_per_s=1000 alpha_us=4\n"
    "path socket  alpha_us=1   gbytes_per_s=5\n"
    "\n"
    "path node    alpha_us=2   gbytes_per_s=4\n"
    "path gpu     alpha_us=8   gbytes_per_s=50\n"
    "path network alpha_us=10  gbytes_per_s=0.125 overhead_us=3\n"
    "nics 4 gbytes_per_s=25\n";

TEST(MachineFile, ParsesEveryPath)
{
    nbr_machine_t m{};
    char why[256];
    ASSERT_EQ(nbr_machine_parse(full, &m, why, sizeof why), NBR_SUCCESS) << why;
    EXPECT_STREQ(m.name, "test-machine");
    EXPECT_DOUBLE_EQ(m.path[NBR_PATH_COPY].alpha, 0.5e-6);
    EXPECT_DOUBLE_EQ(m.path[NBR_PATH_DEVICE].bandwidth, 1000e9);
    EXPECT_DOUBLE_EQ(m.path[NBR_PATH_DEVICE].alpha, 4e-6);
    EXPECT_DOUBLE_EQ(m.path[NBR_PATH_NETWORK].bandwidth, 0.125e9);
    EXPECT_DOUBLE_EQ(m.path[NBR_PATH_NETWORK].overhead, 3e-6);
    EXPECT_DOUBLE_EQ(nbr_path_busy_seconds(&m, NBR_PATH_NETWORK, 125000), 3e-6 + 1e-3);
    EXPECT_DOUBLE_EQ(nbr_path_busy_seconds(&m, NBR_PATH_SOCKET, 0), 1e-6); // none: all of alpha
    EXPECT_EQ(m.nics, 4);
    EXPECT_DOUBLE_EQ(m.nic_bandwidth, 25e9);
    EXPECT_DOUBLE_EQ(nbr_path_seconds(&m, NBR_PATH_NETWORK, 125000), 10e-6 + 1e-3);
    EXPECT_STREQ(nbr_path_name(NBR_PATH_GPU), "gpu");
}

// What nbr_machine_write writes for m, read back into *back.
std::string round_trip(const nbr_machine_t &m, nbr_machine_t *back)
{
    char *buffer = nullptr;
    size_t length = 0;
    FILE *out = open_memstream(&buffer, &length);
    EXPECT_EQ(nbr_machine_write(&m, out), NBR_SUCCESS);
    fclose(out);
    std::string text(buffer ? buffer : "");
    free(buffer);
    char why[256] = "";
    EXPECT_EQ(nbr_machine_parse(text.c_str(), back, why, sizeof why), NBR_SUCCESS) << why << "\n"
                                                                                 << text;
    return text;
}

TEST(MachineFile, WritesWhatItReads)
{
    nbr_machine_t m{}, back{};
    char why[256];
    ASSERT_EQ(nbr_machine_parse(full, &m, why, sizeof why), NBR_SUCCESS);
    m.path[NBR_PATH_SOCKET].alpha = 1.0 / 3 * 1e-6; // not a round number
    m.path[NBR_PATH_NETWORK].overhead = 0.7e-6;
    std::string text = round_trip(m, &back);
    EXPECT_STREQ(back.name, m.name);
    for (int k = 0; k < NBR_NUM_PATHS; k++) {
        EXPECT_NEAR(back.path[k].alpha, m.path[k].alpha, 1e-15 * m.path[k].alpha) << k;
        EXPECT_NEAR(back.path[k].bandwidth, m.path[k].bandwidth, 1e-15 * m.path[k].bandwidth);
        EXPECT_NEAR(back.path[k].overhead, m.path[k].overhead, 1e-15 * m.path[k].overhead);
    }
    EXPECT_EQ(back.nics, m.nics);
    EXPECT_DOUBLE_EQ(back.nic_bandwidth, m.nic_bandwidth);
    EXPECT_EQ(back.cores, 0) << "no cores line: a core per rank";
    // a cores line reads back too
    m.cores = 2;
    m.cores_per_job = 1;
    text = round_trip(m, &back);
    EXPECT_NE(text.find("cores 2 per=job\n"), std::string::npos) << text;
    EXPECT_EQ(back.cores, 2);
    EXPECT_EQ(back.cores_per_job, 1);
    ASSERT_EQ(nbr_machine_parse((std::string(full) + "cores 8\n").c_str(), &back, why, sizeof why),
              NBR_SUCCESS)
        << why;
    EXPECT_EQ(back.cores, 8);
    EXPECT_EQ(back.cores_per_job, 0) << "per node unless told";
    EXPECT_EQ(back.core_network_bandwidth, 0.0) << "network bytes take no core unless told";
    // and the cores' network rate, in either order
    m.core_network_bandwidth = 0.1875e9;
    text = round_trip(m, &back);
    EXPECT_NE(text.find("cores 2 per=job network_gbytes_per_s=0.1875\n"),
              std::string::npos)
        << text;
    EXPECT_DOUBLE_EQ(back.core_network_bandwidth, 0.1875e9);
    ASSERT_EQ(nbr_machine_parse((std::string(full) + "cores 2 network_gbytes_per_s=2 per=job\n").c_str(),
                                &back, why, sizeof why),
              NBR_SUCCESS)
        << why;
    EXPECT_EQ(back.cores_per_job, 1);
    EXPECT_DOUBLE_EQ(back.core_network_bandwidth, 2e9);
    EXPECT_EQ(back.core_message_seconds, 0.0) << "no hand-off cost unless told";
    EXPECT_EQ(back.start, 0.0) << "no per-call start unless told";
    // the hand-off and the per-call start read back, in any order
    m.core_message_seconds = 6.25e-6;
    m.start = 187.5e-6;
    text = round_trip(m, &back);
    EXPECT_NE(text.find("cores 2 per=job network_gbytes_per_s=0.1875 message_us=6.25\n"
                                     "call start_us=187.5\n"),
              std::string::npos)
        << text;
    EXPECT_DOUBLE_EQ(back.core_message_seconds, 6.25e-6);
    EXPECT_DOUBLE_EQ(back.start, 187.5e-6);
    ASSERT_EQ(nbr_machine_parse((std::string(full) + "call start_us=0\ncores 3 message_us=2 per=job\n")
                                    .c_str(),
                                &back, why, sizeof why),
              NBR_SUCCESS)
        << why;
    EXPECT_EQ(back.cores, 3);
    EXPECT_EQ(back.cores_per_job, 1);
    EXPECT_DOUBLE_EQ(back.core_message_seconds, 2e-6);
    EXPECT_EQ(back.start, 0.0);
    EXPECT_EQ(back.nic_burst, 0.0) << "no burst unless told";
    EXPECT_EQ(back.core_network_eager, 0u) << "every message at the cores' rate unless told";
    // the interfaces' burst and the eager limit read back, in any order
    m.nic_burst = 125000;
    m.core_network_eager = 65472;
    text = round_trip(m, &back);
    EXPECT_NE(text.find(" burst_bytes=125000\n"), std::string::npos) << text;
    EXPECT_NE(text.find("network_gbytes_per_s=0.1875 eager_bytes=65472 message_us"),
              std::string::npos)
        << text;
    EXPECT_EQ(back.nic_burst, 125000.0);
    EXPECT_EQ(back.core_network_eager, 65472u);
    // a lone pair's rate and the bytes before it (machine.h)
    EXPECT_EQ(back.core_pair_bandwidth, 0.0) << "no pair rate unless told";
    m.core_pair_bandwidth = 0.125e9;
    m.core_pair_after = 262144;
    text = round_trip(m, &back);
    EXPECT_NE(text.find("eager_bytes=65472 pair_gbytes_per_s=0.125 pair_after_bytes=262144 "
                        "message_us"),
              std::string::npos)
        << text;
    EXPECT_DOUBLE_EQ(back.core_pair_bandwidth, 0.125e9);
    EXPECT_EQ(back.core_pair_after, 262144u);
    EXPECT_EQ(back.core_pair_first_bandwidth, 0.0) << "the cores' rate first unless told";
    m.core_pair_first_bandwidth = 0.1875e9;
    text = round_trip(m, &back);
    EXPECT_NE(text.find("pair_after_bytes=262144 pair_first_gbytes_per_s=0.1875 message_us"),
              std::string::npos)
        << text;
    EXPECT_DOUBLE_EQ(back.core_pair_first_bandwidth, 0.1875e9);
    // the hand-off for messages between nodes only
    EXPECT_EQ(back.core_message_network_only, 0) << "every message's unless told";
    m.core_message_network_only = 1;
    text = round_trip(m, &back);
    EXPECT_NE(text.find("message_us=6.25 message_paths=network\n"), std::string::npos) << text;
    EXPECT_EQ(back.core_message_network_only, 1);
    // the wait for a core before each later phase (machine.h, wake_us)
    EXPECT_EQ(back.core_wake_seconds, 0.0) << "no wake unless told";
    m.core_wake_seconds = 12.5e-6;
    text = round_trip(m, &back);
    EXPECT_NE(text.find("message_us=6.25 message_paths=network wake_us=12.5\n"), std::string::npos)
        << text;
    EXPECT_DOUBLE_EQ(back.core_wake_seconds, 12.5e-6);
    m.core_wake_seconds = 0;
    m.core_message_network_only = 0;
    m.core_pair_bandwidth = 0;
    m.core_pair_after = 0;
    m.core_pair_first_bandwidth = 0;
    EXPECT_EQ(back.nic_burst_bandwidth, 0.0) << "no burst rate unless told";
    m.nic_burst_bandwidth = 0.37e9;
    text = round_trip(m, &back);
    EXPECT_NE(text.find(" burst_bytes=125000 burst_gbytes_per_s=0.37"), std::string::npos) << text;
    EXPECT_DOUBLE_EQ(back.nic_burst_bandwidth, 0.37e9);
    std::string shaped = std::string(full);
    shaped.replace(shaped.find("nics 4 gbytes_per_s=25"), 22,
                   "nics 4 burst_bytes=4096 gbytes_per_s=25");
    ASSERT_EQ(nbr_machine_parse((shaped + "cores 2 eager_bytes=100 per=job\n").c_str(), &back, why,
                                sizeof why),
              NBR_SUCCESS)
        << why << "\n"
        << shaped;
    EXPECT_EQ(back.nic_burst, 4096.0);
    EXPECT_DOUBLE_EQ(back.nic_bandwidth, 25e9);
    EXPECT_EQ(back.core_network_eager, 100u);
    // the copies' cached rate reads back, in any order, and prices copies
    // of up to its size only
    EXPECT_EQ(back.path[NBR_PATH_COPY].cached_bandwidth, 0.0) << "no cached rate unless told";
    m.path[NBR_PATH_COPY].cached_bytes = 65536;
    m.path[NBR_PATH_COPY].cached_bandwidth = 40e9;
    text = round_trip(m, &back);
    EXPECT_NE(text.find("gbytes_per_s=10 cached_bytes=65536 cached_gbytes_per_s=40\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(back.path[NBR_PATH_COPY].cached_bytes, 65536u);
    EXPECT_DOUBLE_EQ(back.path[NBR_PATH_COPY].cached_bandwidth, 40e9);
    EXPECT_DOUBLE_EQ(nbr_path_seconds(&back, NBR_PATH_COPY, 40000), 0.5e-6 + 1e-6);
    EXPECT_DOUBLE_EQ(nbr_path_seconds(&back, NBR_PATH_COPY, 100000), 0.5e-6 + 10e-6);
    std::string cached = std::string(full);
    cached.replace(cached.find("path copy    alpha_us=0.5"), 25,
                   "path copy cached_gbytes_per_s=20 cached_bytes=1024 alpha_us=0.5");
    ASSERT_EQ(nbr_machine_parse(cached.c_str(), &back, why, sizeof why), NBR_SUCCESS)
        << why << "\n"
        << cached;
    EXPECT_EQ(back.path[NBR_PATH_COPY].cached_bytes, 1024u);
    EXPECT_DOUBLE_EQ(back.path[NBR_PATH_COPY].cached_bandwidth, 20e9);
    EXPECT_DOUBLE_EQ(back.path[NBR_PATH_COPY].bandwidth, 10e9);
}

// Each broken file names the line and what is wrong with it.
TEST(MachineFile, ErrorsNameTheLine)
{
    const std::string head = "nbrcoll-machine 1\n";
    const std::string paths = "path copy alpha_us=1 gbytes_per_s=1\n"
                              "path device alpha_us=1 gbytes_per_s=1\n"
                              "path socket alpha_us=1 gbytes_per_s=1\n"
                              "path node alpha_us=1 gbytes_per_s=1\n"
                              "path gpu alpha_us=1 gbytes_per_s=1\n"
                              "path network alpha_us=1 gbytes_per_s=1\n";
    struct Case {
        std::string text, expect;
    } cases[] = {
        {"", "line 1: empty file"},
        {"nbrcoll-topology 1\n", "line 1: expected 'nbrcoll-machine 1'"},
        {"nbrcoll-machine 2\n", "line 1: expected 'nbrcoll-machine 1'"},
        {head + "path copy alpha_us=1\n", "line 2: gbytes_per_s= missing"},
        {head + "path copy gbytes_per_s=1\n", "line 2: alpha_us= missing"},
        {head + "path copy alpha_us=-1 gbytes_per_s=1\n", "line 2: -1: negative"},
        {head + "path copy alpha_us=1 gbytes_per_s=0\n", "line 2: gbytes_per_s must be above 0"},
        {head + "path copy alpha_us=x gbytes_per_s=1\n", "line 2: 'x' is not a number"},
        {head + "path copy alpha_us=1 gbytes_per_s=1 overhead_us=0\n",
         "line 2: overhead_us must be above 0"},
        {head + "path copy alpha_us=1 gbytes_per_s=1 overhead_us=2\n",
         "line 2: overhead_us must not exceed alpha_us"},
        {head + "path disk alpha_us=1 gbytes_per_s=1\n", "line 2: unknown path 'disk'"},
        {head + "path copy alpha_us=1 gbytes_per_s=1 beta=2\n", "line 2: unknown attribute"},
        {head + "path copy alpha_us=1 gbytes_per_s=1\npath copy alpha_us=1 gbytes_per_s=1\n",
         "line 3: path copy given twice"},
        {head + "colour blue\n", "line 2: unknown key 'colour'"},
        {head + "name a b\n", "line 2: 'name' takes one word"},
        {head + paths, "line 8: missing 'nics'"},
        {head + "path copy alpha_us=1 gbytes_per_s=1\nnics 1 gbytes_per_s=1\n",
         "line 4: missing 'path device'"},
        {head + paths + "nics 0 gbytes_per_s=1\n", "line 8: 0 outside 1..1024"},
        {head + paths + "nics 2\n", "line 8: gbytes_per_s= missing"},
        {head + paths + "nics 2 gbytes_per_s=1\nnics 2 gbytes_per_s=1\n",
         "line 9: 'nics' given twice"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 0\n", "line 9: 0 outside"},
        {head + paths + "nics 1 gbytes_per_s=1 burst_bytes=-1\n", "line 8: -1 outside"},
        {head + paths + "nics 1 gbytes_per_s=1 burst_bytes=x\n", "line 8: 'x'"},
        {head + paths + "nics 1 gbytes_per_s=1 burst_gbytes_per_s=0\n",
         "line 8: burst_gbytes_per_s must be above 0"},
        {head + "path network alpha_us=1 gbytes_per_s=1 burst_gbytes_per_s=1\n",
         "line 2: unknown attribute 'burst_gbytes_per_s=1'"},
        {head + "path copy alpha_us=1 gbytes_per_s=1 burst_bytes=1\n",
         "line 2: unknown attribute 'burst_bytes=1'"},
        {head + "path copy alpha_us=1 gbytes_per_s=1 cached_bytes=4096\n",
         "line 2: cached_bytes= and cached_gbytes_per_s= go together"},
        {head + "path copy alpha_us=1 gbytes_per_s=1 cached_gbytes_per_s=4\n",
         "line 2: cached_bytes= and cached_gbytes_per_s= go together"},
        {head + "path copy alpha_us=1 gbytes_per_s=1 cached_bytes=0 cached_gbytes_per_s=4\n",
         "line 2: 0 outside"},
        {head + "path copy alpha_us=1 gbytes_per_s=1 cached_bytes=64 cached_gbytes_per_s=0\n",
         "line 2: cached_gbytes_per_s must be above 0"},
        {head + "path socket alpha_us=1 gbytes_per_s=1 cached_bytes=64 cached_gbytes_per_s=4\n",
         "line 2: unknown attribute 'cached_bytes=64'"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 eager_bytes=-5\n", "line 9: -5 outside"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 eager_bytes=1 eager_bytes=2\n",
         "line 9: 'eager_bytes=2': expected"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 per=rack\n",
         "line 9: 'per=rack': expected per=node, per=job, network_gbytes_per_s=, eager_bytes=, "
         "pair_gbytes_per_s=, pair_after_bytes=, pair_first_gbytes_per_s=, message_us=, "
         "message_paths=all|network or wake_us= (once each)"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 per=job per=node\n",
         "line 9: 'per=node': expected"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 network_gbytes_per_s=0\n",
         "line 9: network_gbytes_per_s must be above 0"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 per=job network_gbytes_per_s=1 x\n",
         "line 9: 'x': expected"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 per=job network_gbytes_per_s=1 "
                        "eager_bytes=1 pair_gbytes_per_s=1 pair_after_bytes=1 "
                        "pair_first_gbytes_per_s=1 message_us=1 message_paths=all wake_us=1 x\n",
         "line 9: too many words"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 message_paths=network\n",
         "line 9: message_paths= needs message_us="},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 message_us=1 message_paths=socket\n",
         "line 9: 'message_paths=socket': expected"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 pair_gbytes_per_s=1\n",
         "line 9: pair_gbytes_per_s= needs network_gbytes_per_s="},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 network_gbytes_per_s=1 "
                        "pair_after_bytes=5\n",
         "line 9: pair_after_bytes= and pair_first_gbytes_per_s= need pair_gbytes_per_s="},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 network_gbytes_per_s=1 "
                        "pair_gbytes_per_s=1 pair_first_gbytes_per_s=0\n",
         "line 9: pair_first_gbytes_per_s must be above 0"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 network_gbytes_per_s=1 "
                        "pair_gbytes_per_s=0\n",
         "line 9: pair_gbytes_per_s must be above 0"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 message_us=0\n",
         "line 9: message_us must be finite and above 0"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 message_us=inf\n",
         "line 9: message_us must be finite and above 0"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 message_us=1 message_us=2\n",
         "line 9: 'message_us=2': expected"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 wake_us=-1\n", "line 9: -1: negative"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 wake_us=inf\n",
         "line 9: wake_us must be 0 or more"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2 wake_us=1 wake_us=1\n",
         "line 9: 'wake_us=1': expected"},
        {head + paths + "nics 1 gbytes_per_s=1\ncall start_us=-5\n", "line 9: -5: negative"},
        {head + paths + "nics 1 gbytes_per_s=1\ncall start_us=inf\n",
         "line 9: start_us must be 0 or more"},
        {head + paths + "nics 1 gbytes_per_s=1\ncall\n", "line 9: 'call' takes start_us="},
        {head + paths + "nics 1 gbytes_per_s=1\ncall stop_us=1\n", "line 9: 'call' takes start_us="},
        {head + paths + "nics 1 gbytes_per_s=1\ncall start_us=1\ncall start_us=1\n",
         "line 10: 'call' given twice"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores\n", "line 9: 'cores' takes a count"},
        {head + paths + "nics 1 gbytes_per_s=1\ncores 2\ncores 2\n",
         "line 10: 'cores' given twice"},
    };
    for (const Case &c : cases) {
        nbr_machine_t m{};
        char why[256] = "";
        EXPECT_EQ(nbr_machine_parse(c.text.c_str(), &m, why, sizeof why), NBR_ERR_ARG) << c.text;
        EXPECT_NE(std::string(why).find(c.expect), std::string::npos)
            << "got: " << why << "\nexpected: " << c.expect << "\nfor:\n"
            << c.text;
    }
    nbr_machine_t m{};
    char why[256] = "";
    EXPECT_EQ(nbr_machine_parse((head + paths + "nics 1 gbytes_per_s=1\n").c_str(), &m, why,
                                sizeof why),
              NBR_SUCCESS)
        << why;
    EXPECT_STREQ(m.name, "unnamed");
    EXPECT_EQ(nbr_machine_load("/no/such/file.machine", &m, why, sizeof why), NBR_ERR_IO);
    EXPECT_NE(std::string(why).find("/no/such/file.machine"), std::string::npos);
}

// The stored files load and say what they are.
TEST(MachineFile, StoredFiles)
{
    for (const char *name : {"emulated-4x4-1gbit", "frontier-slingshot", "dgx-h100-ndr"}) {
        nbr_machine_t m{};
        char why[512];
        std::string path = std::string(NBR_SOURCE_DIR) + "/topo/" + name + ".machine";
        ASSERT_EQ(nbr_machine_load(path.c_str(), &m, why, sizeof why), NBR_SUCCESS) << why;
        EXPECT_STREQ(m.name, name);
        for (int k = 0; k < NBR_NUM_PATHS; k++)
            EXPECT_GT(m.path[k].bandwidth, 0) << name << " " << k;
        // the network is the slowest way between ranks and its start-up the longest
        EXPECT_LT(m.path[NBR_PATH_NETWORK].bandwidth, m.path[NBR_PATH_SOCKET].bandwidth * 10);
        EXPECT_GT(m.path[NBR_PATH_NETWORK].alpha, m.path[NBR_PATH_SOCKET].alpha);
        EXPECT_GE(m.nics, 1);
    }
}

} // namespace
