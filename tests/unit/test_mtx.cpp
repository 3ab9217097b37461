// The Matrix Market reader of the bench harness: the shared matrices, and
// every malformed file refused with its line.
extern "C" {
#include "harness/mtx.h"
}

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <unistd.h>
#include <zlib.h>

namespace {

std::string data(const char *name)
{
    return std::string(NBR_SOURCE_DIR) + "/tests/data/matrices/" + name;
}

// A file with this text in a fresh temporary path.
struct TextFile {
    std::string path;
    explicit TextFile(const std::string &text)
    {
        char name[] = "/tmp/nbr-mtx-XXXXXX";
        int fd = mkstemp(name);
        path = name;
        if (fd >= 0) {
            ssize_t n = write(fd, text.data(), text.size());
            (void)n;
            close(fd);
        }
    }
    ~TextFile() { unlink(path.c_str()); }
};

// Reads text; the error message, or "" when it reads.
std::string error_of(const std::string &text, bh_matrix_t *m = nullptr)
{
    TextFile f(text);
    bh_matrix_t local;
    char err[512] = "";
    int rc = bh_matrix_read(f.path.c_str(), m ? m : &local, err, sizeof err);
    if (rc == 0 && !m)
        bh_matrix_free(&local);
    return rc == 0 ? "" : err;
}

const char *general = "%%MatrixMarket matrix coordinate real general\n";

} // namespace

TEST(MatrixMarket, SharedMatrices)
{
    struct {
        const char *file;
        int rows;
        long nnz;
        bool values;
    } cases[] = {{"dwt_193.mtx.gz", 193, 3493, false},   {"ash292.mtx.gz", 292, 2208, false},
                 {"bcsstk13.mtx.gz", 2003, 83883, true},  {"crack.mtx.gz", 10240, 60760, false},
                 {"delaunay_n10.mtx.gz", 1024, 6112, false}, {"can_256.mtx.gz", 256, 2916, false},
                 {"bcsstk01.mtx.gz", 48, 400, true},      {"1138_bus.mtx.gz", 1138, 4054, true},
                 {"west0479.mtx.gz", 479, 1910, true}};
    for (const auto &c : cases) {
        bh_matrix_t m;
        char err[512] = "";
        ASSERT_EQ(bh_matrix_read(data(c.file).c_str(), &m, err, sizeof err), 0) << err;
        EXPECT_EQ(m.rows, c.rows) << c.file;
        EXPECT_EQ(m.cols, c.rows) << c.file;
        EXPECT_EQ(m.nnz, c.nnz) << c.file;
        EXPECT_EQ(m.row_offsets[m.rows], m.nnz) << c.file;
        EXPECT_EQ(m.val != nullptr, c.values) << c.file;
        for (int i = 0; i < m.rows; i++)
            for (long k = m.row_offsets[i] + 1; k < m.row_offsets[i + 1]; k++)
                EXPECT_LT(m.col[k - 1], m.col[k]) << c.file << " row " << i;
        bh_matrix_free(&m);
    }
}

TEST(MatrixMarket, MirrorsSumsAndSkipsComments)
{
    bh_matrix_t m;
    ASSERT_EQ(error_of("%%MatrixMarket matrix coordinate real symmetric\r\n"
                       "% a comment\n\n"
                       "3 3 4\n"
                       "1 1 2.5\n"
                       "3 1 -1\n"
                       "3 1 -1\r\n" // repeated: summed
                       "2 2 1e1\n",
                       &m),
              "");
    EXPECT_EQ(m.nnz, 4); // (0,0) (0,2) (1,1) (2,0)
    EXPECT_EQ(m.row_offsets[1], 2);
    EXPECT_EQ(m.col[1], 2);
    EXPECT_DOUBLE_EQ(m.val[1], -2.0) << "a repeated entry is summed";
    EXPECT_DOUBLE_EQ(m.val[3], -2.0) << "and mirrored";
    bh_matrix_free(&m);
    ASSERT_EQ(error_of("%%MatrixMarket matrix coordinate integer skew-symmetric\n"
                       "2 2 1\n2 1 7\n",
                       &m),
              "");
    EXPECT_DOUBLE_EQ(m.val[0], -7.0) << "(1,2) of a skew-symmetric matrix";
    EXPECT_DOUBLE_EQ(m.val[1], 7.0);
    bh_matrix_free(&m);
    ASSERT_EQ(error_of("%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 1\n", &m),
              "");
    EXPECT_EQ(m.val, nullptr);
    EXPECT_EQ(m.cols, 3);
    bh_matrix_free(&m);
}

TEST(MatrixMarket, MalformedFilesNameTheLine)
{
    struct {
        std::string text, expect;
    } cases[] = {
        {"", ":0: empty file"},
        {"%%MatrixMarket matrix array real general\n2 2\n", ":1: format 'array'"},
        {"%%MatrixMarket matrix coordinate complex general\n", ":1: field 'complex'"},
        {"%%MatrixMarket matrix coordinate real hermitian\n", ":1: symmetry 'hermitian'"},
        {"%%MatrixMarket vector coordinate real general\n", ":1: object 'vector'"},
        {"%MatrixMarket matrix coordinate real general\n", ":1: expected '%%MatrixMarket"},
        {std::string(general), ":1: expected the size line"},
        {std::string(general) + "2 x 1\n", ":2: columns: expected a whole number"},
        {std::string(general) + "2 2 1 9\n", ":2: the size line has more than 3 numbers"},
        {std::string(general) + "2 2 1\n3 1 1.0\n", ":3: row: expected a whole number in 1..2"},
        {std::string(general) + "2 2 1\n1 0 1.0\n", ":3: column"},
        {std::string(general) + "2 2 1\n1 1\n", ":3: expected a value"},
        {std::string(general) + "2 2 1\n1 1 1.0 extra\n", ":3: unexpected text"},
        {std::string(general) + "2 2 2\n1 1 1.0\n", ":3: the file ends after 1 of 2"},
        {std::string(general) + "2 2 1\n1 1 1.0\n2 2 2.0\n", ":4: more entries than the 1"},
        {"%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1.0\n", ":3: a symmetric file"},
        {"%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", ":2: a symmetric matrix must be square"},
        {"%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n", ":3: a skew-symmetric matrix has no diagonal"},
    };
    for (const auto &c : cases) {
        std::string got = error_of(c.text);
        EXPECT_NE(got.find(c.expect), std::string::npos) << "got: " << got << "\nexpected: "
                                                         << c.expect << "\nfor:\n" << c.text;
    }
    bh_matrix_t m;
    char err[512] = "";
    EXPECT_EQ(bh_matrix_read("/nonexistent/x.mtx", &m, err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("cannot open"), std::string::npos) << err;
}

// A gzip stream cut short: zlib's error, not a short matrix read as whole.
TEST(MatrixMarket, TruncatedGzipIsRefused)
{
    char name[] = "/tmp/nbr-mtx-gz-XXXXXX";
    int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    close(fd);
    gzFile gz = gzopen(name, "wb");
    ASSERT_NE(gz, nullptr);
    gzputs(gz, general);
    gzputs(gz, "300 300 600\n");
    for (int i = 0; i < 600; i++)
        gzprintf(gz, "%d %d %d.25\n", 1 + i % 300, 1 + (i * 7) % 300, i);
    gzclose(gz);
    bh_matrix_t m;
    char err[512] = "";
    ASSERT_EQ(bh_matrix_read(name, &m, err, sizeof err), 0) << "the whole file reads: " << err;
    bh_matrix_free(&m);
    FILE *f = fopen(name, "rb");
    ASSERT_NE(f, nullptr);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    ASSERT_EQ(truncate(name, size / 2), 0);
    EXPECT_EQ(bh_matrix_read(name, &m, err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("truncated or corrupt gzip data"), std::string::npos) << err;
    unlink(name);
}
