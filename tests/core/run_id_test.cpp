#include "core/run_id.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <vector>

using namespace airlock::core;

namespace {
// A deterministic byte source: counts up from a seed.
run_id_generator::random_fn counting_random(std::uint8_t seed) {
    return [seed](std::uint8_t* out, std::size_t n) mutable {
        for (std::size_t i = 0; i < n; ++i) out[i] = seed++;
    };
}
}  // namespace

TEST_CASE("a run id is a 26-character Crockford base32 ULID carrying its millisecond timestamp") {
    std::array<std::uint8_t, 10> zeros{};
    auto id = run_id::from_parts(1469922850259ULL, zeros);
    CHECK(id.str() == "01ARZ3NDEK0000000000000000");  // the ULID spec's example time
    CHECK(id.str().size() == 26);
    CHECK(id.unix_ms() == 1469922850259ULL);
    std::array<std::uint8_t, 10> ones;
    ones.fill(0xff);
    CHECK(run_id::from_parts(0, ones).str() == "0000000000ZZZZZZZZZZZZZZZZ");
}

TEST_CASE("generated run ids are deterministic under an injected clock and random source") {
    std::uint64_t now = 1700000000000;
    run_id_generator a([&] { return now; }, counting_random(7));
    run_id_generator b([&] { return now; }, counting_random(7));
    CHECK(a.next() == b.next());
}

TEST_CASE("run ids sort by time, and stay increasing within one millisecond and across a clock step back") {
    std::uint64_t now = 1700000000000;
    run_id_generator gen([&] { return now; }, counting_random(250));
    std::vector<run_id> ids;
    for (int i = 0; i < 5; ++i) ids.push_back(gen.next());  // same millisecond
    now -= 10;                                              // the wall clock stepped back
    ids.push_back(gen.next());
    now += 1000;
    ids.push_back(gen.next());
    for (std::size_t i = 1; i < ids.size(); ++i) CHECK(ids[i - 1] < ids[i]);
    std::set<std::string> distinct;
    for (auto& id : ids) distinct.insert(id.str());
    CHECK(distinct.size() == ids.size());
}

TEST_CASE("run id parsing accepts lower case and Crockford aliases and refuses the rest") {
    auto id = run_id::parse("01arz3ndek0000000000000000");
    REQUIRE(id.has_value());
    CHECK(id->str() == "01ARZ3NDEK0000000000000000");
    CHECK(run_id::parse("01ARZ3NDEKOOOOOOOOOOOOOOOO")->str() == "01ARZ3NDEK0000000000000000");
    CHECK(run_id::parse("short").error().code == "invalid_run_id");
    CHECK_FALSE(run_id::parse("01ARZ3NDEK000000000000000U").has_value());  // U is not in the alphabet
    CHECK_FALSE(run_id::parse("81ARYZ6S4K0000000000000000").has_value());  // more than 128 bits
}

TEST_CASE("an effect key is derived from run, step and kind, and parses back") {
    auto run = *run_id::parse("01ARZ3NDEK0000000000000000");
    auto k = effect_key::make(run, 3, effect_key::kind::tool);
    CHECK(k.str() == "01ARZ3NDEK0000000000000000/000003/tool");
    CHECK(k == effect_key::make(run, 3, effect_key::kind::tool));
    CHECK_FALSE(k == effect_key::make(run, 3, effect_key::kind::model));
    auto back = effect_key::parse(k.str());
    REQUIRE(back.has_value());
    CHECK(back->step() == 3);
    CHECK(back->what() == effect_key::kind::tool);
    CHECK_FALSE(effect_key::parse("01ARZ3NDEK0000000000000000/3/tool").has_value());
    CHECK_FALSE(effect_key::parse("01ARZ3NDEK0000000000000000/000003/effect").has_value());
}
