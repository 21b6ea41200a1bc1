#include "service/app/pin_watch.hpp"

#include <catch2/catch.hpp>

using namespace airlock::service;

TEST_CASE("the pin watch names the upstream whose pinned definition was accepted") {
    pin_digests before{{"fs/read", "aaa"}, {"fs/write", "bbb"}, {"ledger/post", "ccc"}};
    pin_digests after{{"fs/read", "aaa"}, {"fs/write", "ddd"}, {"ledger/post", "ccc"}};
    CHECK(servers_with_accepted_pins(before, after) == std::set<std::string>{"fs"});
}

TEST_CASE("the pin watch ignores tools pinned for the first time and pins that are gone") {
    pin_digests before{{"fs/read", "aaa"}};
    pin_digests after{{"ledger/post", "ccc"}};
    CHECK(servers_with_accepted_pins(before, after).empty());
    CHECK(servers_with_accepted_pins(before, before).empty());
}

TEST_CASE("the pin watch reads a pin's key up to its first slash as the upstream") {
    pin_digests before{{"fs/dir/list", "aaa"}};
    pin_digests after{{"fs/dir/list", "bbb"}};
    CHECK(servers_with_accepted_pins(before, after) == std::set<std::string>{"fs"});
}
