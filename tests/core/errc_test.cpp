// airlock's error codes as a boost::system category: each has one stable spelling, a spelling
// names one code, and each maps to a JSON-RPC error code.
#include "core/errc.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace airlock;

TEST_CASE("every errc has its own spelling, and the spelling reads back as the same errc") {
    std::set<std::string_view> seen;
    for (auto e : core::all_errcs) {
        auto s = core::to_string(e);
        INFO(static_cast<int>(e) << " " << s);
        CHECK(seen.insert(s).second);
        CHECK(core::errc_from_string(s) == e);
    }
    CHECK_FALSE(core::errc_from_string("corrupt"));
    CHECK_FALSE(core::errc_from_string(""));
}

TEST_CASE("the wire spellings of the codes clients match on are today's") {
    CHECK(core::to_string(core::errc::unknown_run) == "unknown_run");
    CHECK(core::to_string(core::errc::at_capacity) == "at_capacity");
    CHECK(core::to_string(core::errc::invalid_field) == "invalid_field");
    CHECK(core::to_string(core::errc::forbidden_host) == "forbidden_host");
    CHECK(core::to_string(core::errc::unauthorized) == "unauthorized");
    CHECK(core::to_string(core::errc::not_pending) == "not_pending");
}

TEST_CASE("an errc is a boost::system error code of the airlock category, its message the spelling") {
    boost::system::error_code ec = core::errc::not_running;
    CHECK(ec);
    CHECK(ec.category() == core::errc_category());
    CHECK(std::string(ec.category().name()) == "airlock");
    CHECK(ec.message() == "not_running");
    CHECK(ec == core::make_error_code(core::errc::not_running));
    CHECK(ec != core::make_error_code(core::errc::sealed));
}

TEST_CASE("every errc maps to a JSON-RPC error code of the standard set") {
    std::set<std::int64_t> const standard{-32600, -32601, -32602, -32603};
    for (auto e : core::all_errcs) {
        INFO(core::to_string(e));
        CHECK(standard.count(core::to_jsonrpc_code(e)) == 1);
    }
    CHECK(core::to_jsonrpc_code(core::errc::invalid_field) == -32602);
    CHECK(core::to_jsonrpc_code(core::errc::unauthorized) == -32600);
    CHECK(core::to_jsonrpc_code(core::errc::internal) == -32603);
}
