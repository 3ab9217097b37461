// The verifier must reject broken plans: each test breaks a correct naive
// plan in one way and expects the verifier to say so.
#include "plan_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

struct Broken : ::testing::Test {
    nbr_graph_t graph{};
    void SetUp() override { ASSERT_EQ(nbr_graph_erdos_renyi(6, 0.7, 11, &graph), NBR_SUCCESS); }
    void TearDown() override { nbr_graph_free(&graph); }

    // Builds a correct allgather job, lets `mutate` break it, verifies.
    template <class F> std::string verify_after(F mutate, nbr_collective_t coll = NBR_COLL_ALLGATHER)
    {
        LayoutParams p;
        p.coll = coll;
        p.block = 8;
        p.gap = 2;
        WholeJob job(&graph, p);
        EXPECT_EQ(job.build(nbr_algorithm_find("naive")), NBR_SUCCESS);
        EXPECT_EQ(job.verify(), NBR_SUCCESS) << job.message();
        mutate(job);
        return job.verify() == NBR_SUCCESS ? std::string("accepted") : job.message();
    }
};

nbr_op_t *first_op(WholeJob &job, int rank, nbr_op_kind_t kind)
{
    for (int i = 0; i < job.plans[rank].num_ops; i++)
        if (job.plans[rank].ops[i].kind == kind)
            return &job.plans[rank].ops[i];
    return nullptr;
}

TEST_F(Broken, ReceiveAtWrongOffset)
{
    std::string why = verify_after([](WholeJob &job) { first_op(job, 0, NBR_OP_RECV)->offset += 1; });
    EXPECT_NE(why, "accepted");
}

TEST_F(Broken, SendFromWrongOffset)
{
    std::string why = verify_after([](WholeJob &job) {
        nbr_op_t *send = first_op(job, 1, NBR_OP_SEND);
        send->offset -= 1; // the gap byte before the slot: not data
    });
    EXPECT_NE(why.find("nothing wrote"), std::string::npos) << why;
}

TEST_F(Broken, MissingReceiveHangs)
{
    std::string why = verify_after([](WholeJob &job) {
        nbr_plan_t &plan = job.plans[2];
        plan.ops[0].kind = NBR_OP_COPY; // drop the first receive...
        plan.ops[0].src_buf = NBR_BUF_SEND;
        plan.ops[0].src_offset = job.layouts[2].send[0].offset;
        plan.ops[0].peer = -1;
    });
    EXPECT_NE(why.find("no matching receive"), std::string::npos) << why;
}

TEST_F(Broken, WrongSizeMessage)
{
    std::string why = verify_after([](WholeJob &job) { first_op(job, 3, NBR_OP_SEND)->bytes -= 1; });
    EXPECT_NE(why.find("receives"), std::string::npos) << why;
}

TEST_F(Broken, ReceiveIntoScratchNeverCopied)
{
    std::string why = verify_after([](WholeJob &job) {
        job.plans[0].scratch_bytes = 64;
        first_op(job, 0, NBR_OP_RECV)->buf = NBR_BUF_SCRATCH;
    });
    EXPECT_NE(why.find("written 0 times"), std::string::npos) << why;
}

TEST_F(Broken, ReadsUnwrittenScratch)
{
    std::string why = verify_after([](WholeJob &job) {
        job.plans[1].scratch_bytes = 64;
        nbr_op_t *send = first_op(job, 1, NBR_OP_SEND);
        send->buf = NBR_BUF_SCRATCH;
        send->offset = 0;
    });
    EXPECT_NE(why.find("nothing wrote"), std::string::npos) << why;
}

TEST_F(Broken, DoubleWrite)
{
    std::string why = verify_after([](WholeJob &job) {
        nbr_plan_t &plan = job.plans[4];
        nbr_plan_begin_phase(&plan); // a later phase copies over a received slot
        nbr_op_t *recv = first_op(job, 4, NBR_OP_RECV);
        nbr_plan_add_copy(&plan, NBR_BUF_RECV, recv->offset, NBR_BUF_SEND,
                          job.layouts[4].send[0].offset, recv->bytes);
    });
    EXPECT_NE(why, "accepted");
}

TEST_F(Broken, ConflictInsidePhase)
{
    std::string why = verify_after([](WholeJob &job) {
        nbr_plan_t &plan = job.plans[5];
        nbr_op_t *recv = first_op(job, 5, NBR_OP_RECV);
        size_t offset = recv->offset, bytes = recv->bytes;
        nbr_plan_add_copy(&plan, NBR_BUF_SCRATCH, 0, NBR_BUF_RECV, offset, bytes);
        plan.scratch_bytes = 64;
    });
    EXPECT_NE(why.find("another op of the phase"), std::string::npos) << why;
}

TEST_F(Broken, OutOfBounds)
{
    std::string why = verify_after([](WholeJob &job) { first_op(job, 0, NBR_OP_RECV)->offset = 1u << 20; });
    EXPECT_NE(why.find("past the buffer end"), std::string::npos) << why;
}

TEST_F(Broken, PhaseOrderDeadlock)
{
    // Two ranks that each wait for their receive before posting their send.
    const int src[] = {0, 1};
    const int dst[] = {1, 0};
    nbr_graph_t pair{};
    ASSERT_EQ(nbr_graph_from_edges(2, 2, src, dst, &pair), NBR_SUCCESS);
    LayoutParams p;
    p.block = 4;
    WholeJob job(&pair, p);
    for (int r = 0; r < 2; r++) {
        nbr_plan_init(&job.plans[r], r, 2, NBR_COLL_ALLGATHER, "test");
        nbr_plan_begin_phase(&job.plans[r]);
        nbr_plan_add_recv(&job.plans[r], 1 - r, 0, NBR_BUF_RECV, 0, 4);
        nbr_plan_begin_phase(&job.plans[r]);
        nbr_plan_add_send(&job.plans[r], 1 - r, 0, NBR_BUF_SEND, 0, 4);
        ASSERT_EQ(nbr_plan_seal(&job.plans[r], nullptr, nullptr), NBR_SUCCESS);
    }
    EXPECT_NE(job.verify(), NBR_SUCCESS);
    EXPECT_NE(job.message().find("hang"), std::string::npos) << job.message();
    nbr_graph_free(&pair);
}

TEST_F(Broken, AlltoallvSwappedSlots)
{
    std::string why = verify_after(
        [](WholeJob &job) {
            // rank 0 sends each of two out-neighbors the other one's block
            // (same size, so only the contents can give it away)
            nbr_plan_t &plan = job.plans[0];
            std::vector<nbr_op_t *> sends;
            for (int i = 0; i < plan.num_ops; i++)
                if (plan.ops[i].kind == NBR_OP_SEND)
                    sends.push_back(&plan.ops[i]);
            ASSERT_GE(sends.size(), 2u);
            std::swap(sends[0]->offset, sends[1]->offset);
            sends[0]->bytes = sends[1]->bytes = std::min(sends[0]->bytes, sends[1]->bytes);
            for (int r = 0; r < 6; r++) // receivers expect the trimmed sizes
                for (int i = 0; i < job.plans[r].num_ops; i++) {
                    nbr_op_t &op = job.plans[r].ops[i];
                    if (op.kind == NBR_OP_RECV && op.peer == 0 &&
                        (r == sends[0]->peer || r == sends[1]->peer))
                        op.bytes = sends[0]->bytes;
                }
        },
        NBR_COLL_ALLTOALLV);
    EXPECT_NE(why, "accepted");
}

} // namespace
