// The settings table (base/settings_table.def) and its readers: every row
// loads its default, the environment overrides it within the row's range,
// and a bad value is NBR_ERR_INFO.
extern "C" {
#include "base/settings.h"
#include "front/config.h"
}

#include <nbrcoll.h>

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Clears every setting's variable for the test and restores them after.
class Settings : public ::testing::Test {
protected:
    void SetUp() override
    {
        for (int i = 0; i < NBR_NUM_SETTINGS; i++) {
            const char *v = getenv(nbr_settings[i].env);
            saved.push_back(v ? std::string(v) : std::string("\x01"));
            unsetenv(nbr_settings[i].env);
        }
    }
    void TearDown() override
    {
        for (int i = 0; i < NBR_NUM_SETTINGS; i++) {
            if (saved[i] == "\x01")
                unsetenv(nbr_settings[i].env);
            else
                setenv(nbr_settings[i].env, saved[i].c_str(), 1);
        }
    }
    std::vector<std::string> saved;
};

int words_of(const nbr_setting_t &s)
{
    int n = 1;
    for (const char *c = s.words; *c; c++)
        n += *c == '|';
    return n;
}

TEST_F(Settings, EveryRowIsWellFormedAndLoadsItsDefault)
{
    for (int i = 0; i < NBR_NUM_SETTINGS; i++) {
        const nbr_setting_t &s = nbr_settings[i];
        const nbr_setting_id_t id = static_cast<nbr_setting_id_t>(i);
        ASSERT_NE(s.env, nullptr);
        EXPECT_EQ(strncmp(s.env, "NBR_", 4), 0) << s.env;
        if (s.key) {
            EXPECT_EQ(strncmp(s.key, "nbr_", 4), 0) << s.key;
        }
        for (int j = 0; j < i; j++)
            EXPECT_STRNE(s.env, nbr_settings[j].env);
        int v = -12345;
        char text[NBR_PATH_MAX];
        switch (s.type) {
        case NBR_SETTING_TYPE_INT:
            EXPECT_LE(s.min, s.max) << s.env;
            EXPECT_EQ(nbr_setting_int(MPI_INFO_NULL, id, &v), NBR_SUCCESS) << s.env;
            EXPECT_EQ(v, s.def) << s.env;
            break;
        case NBR_SETTING_TYPE_BOOL:
            EXPECT_EQ(nbr_setting_bool(MPI_INFO_NULL, id, &v), NBR_SUCCESS) << s.env;
            EXPECT_EQ(v, s.def) << s.env;
            break;
        case NBR_SETTING_TYPE_ENUM: {
            ASSERT_EQ(nbr_setting_enum(MPI_INFO_NULL, id, &v), NBR_SUCCESS) << s.env;
            ASSERT_GE(v, 0);
            ASSERT_LT(v, words_of(s));
            char word[64];
            nbr_setting_word(id, v, word, sizeof word);
            EXPECT_STREQ(word, s.text) << s.env;
            break;
        }
        case NBR_SETTING_TYPE_STRING:
            EXPECT_EQ(nbr_setting_string(MPI_INFO_NULL, id, text, sizeof text), NBR_SUCCESS);
            EXPECT_STREQ(text, s.text) << s.env;
            break;
        }
    }
}

TEST_F(Settings, TheConfigurationStartsFromTheTable)
{
    nbr_config_t c;
    ASSERT_EQ(nbr_config_load(MPI_INFO_NULL, &c), NBR_SUCCESS);
    EXPECT_EQ(c.algorithm, nullptr); // auto
    EXPECT_EQ(c.auto_trials, NBR_SETTING_AUTO_TRIALS_DEFAULT);
    EXPECT_EQ(c.auto_whole_graph_ranks, NBR_SETTING_AUTO_WHOLE_GRAPH_RANKS_DEFAULT);
    EXPECT_EQ(c.expected_starts, NBR_SETTING_EXPECTED_STARTS_DEFAULT);
    EXPECT_EQ(c.exec.staging_chunk, 1 << 20);
    EXPECT_EQ(c.exec.gpu_aware_mpi, -1);
    EXPECT_EQ(c.exec.memory, NBR_MEMORY_AUTO);
    EXPECT_EQ(c.forced_gpu, -1);
    EXPECT_EQ(c.check_graph, 1);
    EXPECT_EQ(c.agree_errors, 0);
    EXPECT_EQ(c.ranks_per_node, 0);
    EXPECT_STREQ(c.dump_dir, "");
    nbr_config_free(&c);
}

// Each case: the variable, a value, and the status the configuration loads with.
TEST_F(Settings, TheEnvironmentOverridesWithinTheRange)
{
    struct Case {
        const char *env, *value;
        int rc;
    } cases[] = {
        {"NBR_AUTO_TRIALS", "100", NBR_SUCCESS},     {"NBR_AUTO_TRIALS", "101", NBR_ERR_INFO},
        {"NBR_AUTO_TRIALS", "-1", NBR_ERR_INFO},     {"NBR_AUTO_TRIALS", "5x", NBR_ERR_INFO},
        {"NBR_GPU_AWARE_MPI", "1", NBR_SUCCESS},     {"NBR_GPU_AWARE_MPI", "2", NBR_ERR_INFO},
        {"NBR_STAGING_CHUNK", "4096", NBR_SUCCESS},  {"NBR_STAGING_CHUNK", "4095", NBR_ERR_INFO},
        {"NBR_EXPECTED_STARTS", "0", NBR_ERR_INFO},  {"NBR_MEMORY", "device", NBR_SUCCESS},
        {"NBR_MEMORY", "gpu", NBR_ERR_INFO},         {"NBR_CHECK_GRAPH", "off", NBR_SUCCESS},
        {"NBR_CHECK_GRAPH", "maybe", NBR_ERR_INFO},  {"NBR_AGREE_ERRORS", "yes", NBR_SUCCESS},
        {"NBR_AGGREGATE_REGION", "socket", NBR_SUCCESS},
        {"NBR_AGGREGATE_REGION", "rack", NBR_ERR_INFO},
        {"NBR_COMBINING_THETA", "0", NBR_ERR_INFO},  {"NBR_LEADER_MIN_BYTES", "-5", NBR_ERR_INFO},
        {"NBR_ALGORITHM", "naive", NBR_SUCCESS},     {"NBR_GPU", "-1", NBR_ERR_INFO},
        {"NBR_MACHINE", "/no/such.machine", NBR_ERR_INFO},
    };
    for (const Case &k : cases) {
        setenv(k.env, k.value, 1);
        nbr_config_t c;
        const int rc = nbr_config_load(MPI_INFO_NULL, &c);
        EXPECT_EQ(rc, k.rc) << k.env << "=" << k.value;
        if (rc == NBR_SUCCESS) {
            const std::string env = k.env;
            EXPECT_TRUE(env != "NBR_MEMORY" || c.exec.memory == NBR_MEMORY_DEVICE);
            EXPECT_TRUE(env != "NBR_CHECK_GRAPH" || c.check_graph == 0);
            EXPECT_TRUE(env != "NBR_AGREE_ERRORS" || c.agree_errors == 1);
            EXPECT_TRUE(env != "NBR_AUTO_TRIALS" || c.auto_trials == 100);
            nbr_config_free(&c);
        }
        unsetenv(k.env);
    }
}

TEST_F(Settings, EnumsGiveTheirWordsIndex)
{
    int v = -1;
    setenv("NBR_AGGREGATE_REGION", "socket", 1);
    EXPECT_EQ(nbr_setting_enum(MPI_INFO_NULL, NBR_SETTING_AGGREGATE_REGION, &v), NBR_SUCCESS);
    EXPECT_EQ(v, 1);
    setenv("NBR_AGGREGATE_REGION", "sock", 1);
    EXPECT_EQ(nbr_setting_enum(MPI_INFO_NULL, NBR_SETTING_AGGREGATE_REGION, &v), NBR_ERR_INFO);
    char word[16];
    nbr_setting_word(NBR_SETTING_MEMORY, 2, word, sizeof word);
    EXPECT_STREQ(word, "device");
    nbr_setting_word(NBR_SETTING_MEMORY, 3, word, sizeof word);
    EXPECT_STREQ(word, "");
}

TEST_F(Settings, OverKeepsTheValueAndNamesAreKeyAndVariable)
{
    int starts = 7;
    EXPECT_EQ(nbr_setting_int_over(MPI_INFO_NULL, NBR_SETTING_EXPECTED_STARTS, &starts),
              NBR_SUCCESS);
    EXPECT_EQ(starts, 7);
    setenv("NBR_EXPECTED_STARTS", "3", 1);
    EXPECT_EQ(nbr_setting_int_over(MPI_INFO_NULL, NBR_SETTING_EXPECTED_STARTS, &starts),
              NBR_SUCCESS);
    EXPECT_EQ(starts, 3);
    char name[64];
    nbr_setting_name(NBR_SETTING_CHECK_GRAPH, name, sizeof name);
    EXPECT_STREQ(name, "nbr_check_graph / NBR_CHECK_GRAPH");
    nbr_setting_name(NBR_SETTING_GPU, name, sizeof name);
    EXPECT_STREQ(name, "NBR_GPU");
}

TEST_F(Settings, ReadingARowAsAnotherTypeIsAnInternalError)
{
    int v = 0;
    char text[8];
    EXPECT_EQ(nbr_setting_int(MPI_INFO_NULL, NBR_SETTING_MEMORY, &v), NBR_ERR_INTERNAL);
    EXPECT_EQ(nbr_setting_bool(MPI_INFO_NULL, NBR_SETTING_AUTO_TRIALS, &v), NBR_ERR_INTERNAL);
    EXPECT_EQ(nbr_setting_string(MPI_INFO_NULL, NBR_SETTING_CHECK_GRAPH, text, sizeof text),
              NBR_ERR_INTERNAL);
}

} // namespace
