// The side channel: socket errnos per platform and call, and the error lines that say which side
// of a connection a number came from (side_channel.hpp).
#include <gidpolicy/side_channel.hpp>

#include <gtest/gtest.h>

#include <string>

namespace gidpolicy {
namespace {

const CandidateCause* side_cause(const Diagnosis& d, std::string_view id) {
  for (const auto& c : d.causes)
    if (c.id == id) return &c;
  return nullptr;
}

TEST(SideChannel, RefusedIsNobodyListeningOnBothPlatformsUnderTheirOwnNumbers) {
  for (const auto& [p, n] : {std::pair{Platform::darwin, 61}, std::pair{Platform::linux_kernel, 111}}) {
    const Diagnosis d = diagnose_side_channel(n, p, SocketCall::connect);
    EXPECT_EQ(d.name, "ECONNREFUSED");
    ASSERT_FALSE(d.causes.empty());
    EXPECT_EQ(d.causes.front().id, "nobody_listening");
    EXPECT_EQ(d.causes.front().likelihood, Likelihood::likely);
    EXPECT_NE(d.causes.front().summary.find("rank 0"), std::string::npos) << d.causes.front().summary;
  }
}

TEST(SideChannel, TimedOutAtConnectIsAnUnansweredSynOrTheWrongInterface) {
  const Diagnosis d = diagnose_side_channel(60, Platform::darwin, SocketCall::connect);
  EXPECT_EQ(d.name, "ETIMEDOUT");
  ASSERT_NE(side_cause(d, "syn_unanswered"), nullptr);
  ASSERT_NE(side_cause(d, "wrong_interface"), nullptr);
  EXPECT_NE(side_cause(d, "wrong_interface")->summary.find("169.254/16"), std::string::npos);
  // connect() alone: no causes of a broken stream.
  EXPECT_EQ(side_cause(d, "link_lost"), nullptr);
}

TEST(SideChannel, EachCallHasItsOwnCauses) {
  EXPECT_EQ(diagnose_side_channel(65, Platform::darwin, SocketCall::connect).causes.front().id,
            "no_neighbour");
  EXPECT_EQ(diagnose_side_channel(113, Platform::linux_kernel, SocketCall::connect).causes.front().id,
            "no_neighbour");
  EXPECT_EQ(diagnose_side_channel(49, Platform::darwin, SocketCall::bind).causes.front().id,
            "address_not_here");
  EXPECT_EQ(diagnose_side_channel(98, Platform::linux_kernel, SocketCall::bind).causes.front().id,
            "port_taken");
  EXPECT_EQ(diagnose_side_channel(54, Platform::darwin, SocketCall::recv).causes.front().id, "peer_ended");
  EXPECT_EQ(diagnose_side_channel(32, Platform::linux_kernel, SocketCall::send).causes.front().id,
            "peer_ended");
  const Diagnosis closed = diagnose_side_channel(0, Platform::darwin, SocketCall::recv, true);
  EXPECT_EQ(closed.causes.front().id, "peer_ended");
  EXPECT_EQ(closed.to_string().find("(0)"), std::string::npos) << closed.to_string();
}

TEST(SideChannel, AnUnnamedCallSaysWhichCallEachCauseBelongsTo) {
  const Diagnosis d = diagnose_side_channel(60, Platform::darwin);
  ASSERT_NE(side_cause(d, "syn_unanswered"), nullptr);
  ASSERT_NE(side_cause(d, "link_lost"), nullptr);
  EXPECT_EQ(side_cause(d, "syn_unanswered")->summary.rfind("at connect(): ", 0), 0u);
  EXPECT_EQ(side_cause(d, "link_lost")->summary.rfind("at send() or recv(): ", 0), 0u);
}

TEST(SideChannel, ANumberWithoutAModelSaysSoAndNamesTheOtherPlatformsMeaning) {
  // 61 on Linux is ENODATA (an RTR from an empty slot), never a socket's; on Darwin it is
  // ECONNREFUSED.
  const Diagnosis d = diagnose_side_channel(61, Platform::linux_kernel, SocketCall::connect);
  ASSERT_EQ(d.causes.size(), 1u);
  EXPECT_EQ(d.causes.front().id, "unknown");
  EXPECT_NE(d.causes.front().summary.find("on darwin 61 is ECONNREFUSED"), std::string::npos)
      << d.causes.front().summary;
  EXPECT_EQ(diagnose_side_channel(22, Platform::darwin).causes.front().id, "unknown");
}

TEST(SideChannel, NamesAndNumbersRoundTripPerPlatform) {
  for (Platform p : {Platform::darwin, Platform::linux_kernel}) {
    for (const char* name : {"ECONNREFUSED", "ETIMEDOUT", "EHOSTUNREACH", "EHOSTDOWN", "ENETUNREACH",
                             "EADDRNOTAVAIL", "EADDRINUSE", "ECONNRESET", "EPIPE", "ECONNABORTED"}) {
      const auto n = socket_errno_from_name(p, name);
      ASSERT_TRUE(n) << name;
      EXPECT_EQ(socket_errno_name(p, *n), name);
    }
  }
  EXPECT_EQ(socket_errno_from_name(Platform::darwin, "EHOSTUNREACH"), 65);
  EXPECT_EQ(socket_errno_from_name(Platform::linux_kernel, "EHOSTUNREACH"), 113);
  EXPECT_FALSE(socket_errno_from_name(Platform::darwin, "EINVAL"));
  EXPECT_EQ(socket_errno_name(Platform::darwin, 7), "errno 7");
}

TEST(ErrorLines, JacclsSideChannelLinesNameTheCallAndTheNumber) {
  struct Case {
    const char* line;
    SocketCall call;
    int err;
  };
  for (const Case& c : {Case{"[jaccl] Couldn't connect (error: 60)", SocketCall::connect, 60},
                        Case{"RuntimeError: [jaccl] Couldn't connect (error: 61)", SocketCall::connect, 61},
                        Case{"[ring] Couldn't connect (error: 65)", SocketCall::connect, 65},
                        Case{"[jaccl] Couldn't bind socket (error: 48)", SocketCall::bind, 48},
                        Case{"[jaccl] Accept failed (error: 53)", SocketCall::accept, 53},
                        Case{"[jaccl] Send failed with errno=32", SocketCall::send, 32},
                        Case{"[jaccl] Recv failed with errno=54\n", SocketCall::recv, 54}}) {
    const auto m = read_error_message(c.line);
    ASSERT_TRUE(m) << c.line;
    EXPECT_EQ(m->side, ErrorSide::side_channel) << c.line;
    EXPECT_EQ(m->call, c.call) << c.line;
    EXPECT_EQ(m->err, c.err) << c.line;
  }
  EXPECT_EQ(read_error_message("[ring] Couldn't connect (error: 65)")->program, "ring");
  const auto closed = read_error_message(
      "[jaccl] Recv failed: peer closed the side channel (another rank failed during init or exited)");
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->peer_closed);
  EXPECT_FALSE(closed->err);
  EXPECT_EQ(closed->program, "jaccl");
}

TEST(ErrorLines, QueuePairLinesAreTheRtrOrAnotherTransition) {
  const auto rtr = read_error_message("[jaccl] Changing queue pair to RTR failed with errno 22");
  ASSERT_TRUE(rtr);
  EXPECT_EQ(rtr->side, ErrorSide::rtr);
  EXPECT_EQ(rtr->err, 22);
  const auto init =
      read_error_message("ValueError: [jaccl] Changing queue pair to INIT failed with errno 22");
  ASSERT_TRUE(init);
  EXPECT_EQ(init->side, ErrorSide::queue_pair);
  EXPECT_EQ(init->transition, "INIT");
  const auto py = read_error_message("ConnectionRefusedError: [Errno 61] Connection refused");
  ASSERT_TRUE(py);
  EXPECT_EQ(py->side, ErrorSide::side_channel);
  EXPECT_EQ(py->call, SocketCall::unknown);
  EXPECT_EQ(py->err, 61);
}

TEST(ErrorLines, TextThatIsNoKnownLineIsNotGuessedAt) {
  for (const std::string& bad :
       {std::string(""), std::string("errno 22"), std::string("[jaccl] Couldn't connect"),
        std::string("[jaccl] Couldn't connect (error: 60) and more"),
        std::string("[jaccl] Couldn't connect (error: 123456)"),
        std::string("[jaccl] Couldn't connect (error: -1)"),
        std::string("[an overlong tag of more than thirty-two bytes] Couldn't connect (error: 60)"),
        "[jaccl] Couldn't connect (error: 60)" + std::string(kMaxErrorMessage, ' ')})
    EXPECT_FALSE(read_error_message(bad)) << bad;
}

}  // namespace
}  // namespace gidpolicy
