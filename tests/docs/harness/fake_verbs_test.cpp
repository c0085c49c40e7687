// Harness for docs/testing.md "Fakes instead of RDMA hardware": a test body using the in-process fake verbs.
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <gtest/gtest.h>

#include <cerrno>

TEST(DocSnippet, FakeVerbs) {
#include SNIPPET_MAIN
}
