#include "store_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace airlock;
using namespace airlock::testing;

namespace {
template <class Fixture>
core::pin_store& pins_of(Fixture& f) {
    auto* p = dynamic_cast<core::pin_store*>(f.store.get());
    REQUIRE(p != nullptr);
    return *p;
}
}  // namespace

TEMPLATE_TEST_CASE("the first definition of a tool is pinned and the same one matches later", "[pins]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto& pins = pins_of(f);
    CHECK(*run_awaitable(pins.async_check_pin("ledger/post", "aaa")) == core::pin_verdict::first_seen);
    CHECK(*run_awaitable(pins.async_check_pin("ledger/post", "aaa")) == core::pin_verdict::matches);
}

TEMPLATE_TEST_CASE("a changed definition is held pending until accepted", "[pins]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto& pins = pins_of(f);
    REQUIRE(run_awaitable(pins.async_check_pin("ledger/post", "aaa")).has_value());
    CHECK(*run_awaitable(pins.async_check_pin("ledger/post", "bbb")) == core::pin_verdict::changed);
    CHECK(*run_awaitable(pins.async_check_pin("ledger/post", "bbb")) == core::pin_verdict::changed);
    auto listed = run_awaitable(pins.async_pins());
    REQUIRE(listed.has_value());
    REQUIRE(listed->size() == 1);
    CHECK(listed->front().pinned == "aaa");
    CHECK(listed->front().pending == std::optional<std::string>("bbb"));
    auto accepted = run_awaitable(pins.async_accept_pin("ledger/post"));
    REQUIRE(accepted.has_value());
    CHECK(accepted->pinned == "bbb");
    CHECK(*run_awaitable(pins.async_check_pin("ledger/post", "bbb")) == core::pin_verdict::matches);
}

TEMPLATE_TEST_CASE("accepting with nothing pending is refused", "[pins]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto& pins = pins_of(f);
    auto r = run_awaitable(pins.async_accept_pin("ledger/read"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "no_pending");
}

TEMPLATE_TEST_CASE("a pin keeps the definitions it compares, and accepting one makes it the pinned definition", "[pins]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto& pins = pins_of(f);
    REQUIRE(run_awaitable(pins.async_check_pin("ledger/post", "aaa", R"({"name":"post"})")).has_value());
    REQUIRE(run_awaitable(pins.async_check_pin("ledger/post", "bbb", R"({"name":"post","title":"Post"})")).has_value());
    auto listed = run_awaitable(pins.async_pins());
    REQUIRE(listed.has_value());
    REQUIRE(listed->size() == 1);
    CHECK(listed->front().pinned_definition == R"({"name":"post"})");
    CHECK(listed->front().pending_definition == R"({"name":"post","title":"Post"})");
    auto accepted = run_awaitable(pins.async_accept_pin("ledger/post"));
    REQUIRE(accepted.has_value());
    CHECK(accepted->pinned_definition == R"({"name":"post","title":"Post"})");
    CHECK(accepted->pending_definition.empty());
}

TEMPLATE_TEST_CASE("a pin that kept only its digest learns its definition when that definition is seen again", "[pins]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto& pins = pins_of(f);
    REQUIRE(run_awaitable(pins.async_check_pin("ledger/post", "aaa")).has_value());
    REQUIRE(run_awaitable(pins.async_check_pin("ledger/post", "aaa", R"({"name":"post"})")).has_value());
    auto listed = run_awaitable(pins.async_pins());
    REQUIRE(listed.has_value());
    CHECK(listed->front().pinned_definition == R"({"name":"post"})");
}

TEMPLATE_TEST_CASE("accepting names the pending digest reviewed, and another pending one is refused", "[pins]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto& pins = pins_of(f);
    REQUIRE(run_awaitable(pins.async_check_pin("ledger/post", "aaa")).has_value());
    REQUIRE(run_awaitable(pins.async_check_pin("ledger/post", "ccc")).has_value());
    auto stale = run_awaitable(pins.async_accept_pin("ledger/post", std::string("bbb")));
    REQUIRE_FALSE(stale.has_value());
    CHECK(stale.error().code == "pending_changed");
    CHECK(run_awaitable(pins.async_pins())->front().pinned == "aaa");
    auto accepted = run_awaitable(pins.async_accept_pin("ledger/post", std::string("ccc")));
    REQUIRE(accepted.has_value());
    CHECK(accepted->pinned == "ccc");
}
