// GoogleTest harness for tests that run under mpirun.
//
// Rules for tests built on it (they keep a failing rank from hanging the
// others):
//  * derive every test from nbrtest::MpiTest (TEST_F), so that TearDown can
//    gather the failures of every rank onto rank 0;
//  * never use ASSERT_* (or anything else that returns early) before a
//    collective call: record failures with EXPECT_* / ADD_FAILURE and carry
//    on, so that every rank makes the same sequence of collective calls;
//  * every rank runs the same tests in the same order (no per-rank filters).
// Only rank 0 prints gtest's normal output; failures of other ranks show up
// there as "failure(s) on rank R" and fail the same test. The exit status is
// non-zero on every rank if any rank failed.
#ifndef NBRCOLL_TESTS_MPI_HARNESS_H
#define NBRCOLL_TESTS_MPI_HARNESS_H

#include <mpi.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace nbrtest {

int world_rank();
int world_size();

// Collective over comm: true iff local is true on every / some rank.
bool all_ranks(bool local, MPI_Comm comm = MPI_COMM_WORLD);
bool any_rank(bool local, MPI_Comm comm = MPI_COMM_WORLD);

// Prints a line to stderr at once, prefixed with the rank (for diagnosing
// hangs: ctest shows it even when the test is killed by its timeout).
void note(const std::string &msg);

// True when NBRTEST_TRACE is set: rank 0 prints every case before it runs.
bool tracing();

class MpiTest : public ::testing::Test {
  protected:
    void TearDown() override;
};

// Registers a function run_main calls after the tests, before MPI_Finalize
// (to free datatypes and other MPI objects the tests cached).
void at_finalize(std::function<void()> fn);

// The whole main(): MPI_Init, gtest, result agreement, MPI_Finalize.
// errors_return: put MPI_ERRORS_RETURN on MPI_COMM_WORLD and MPI_COMM_SELF
// (the error tests hand invalid communicators to the library).
int run_main(int argc, char **argv, bool errors_return);

}  // namespace nbrtest

#endif
