// Harness for docs/testing.md (MockVerbs): a gmock expectation over a FakeVerbs named `fake`.
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/fakes/testing/mock_verbs.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

TEST(DocSnippet, MockVerbs) {
  gidpolicy::fakes::FakeVerbs fake;
#include SNIPPET_MAIN
}
