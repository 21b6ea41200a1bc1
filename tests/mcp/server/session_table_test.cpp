#include "mcp/server/session_table.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace airlock::mcp;
using namespace std::chrono_literals;

namespace {

struct fake_session : session_record {
    bool busy() const override { return in_use; }
    bool in_use = false;
};

// A clock the test moves by hand, and a CSPRNG that hands out the byte patterns it is given (a
// draw past the last pattern repeats it).
struct rig {
    std::chrono::steady_clock::time_point t = std::chrono::steady_clock::time_point{} + 1000h;
    std::vector<std::uint8_t> draws{1, 2, 3, 4, 5, 6, 7, 8};
    std::size_t next_draw = 0;

    session_table table(std::size_t max_sessions = 8, std::size_t per_principal = 2,
                        std::chrono::milliseconds idle = 60s) {
        session_table::options o;
        o.idle_timeout = idle;
        o.max_sessions = max_sessions;
        o.max_per_principal = per_principal;
        o.clock = [this] { return t; };
        o.random = [this](std::uint8_t* out, std::size_t n) {
            auto b = draws[std::min(next_draw, draws.size() - 1)];
            ++next_draw;
            for (std::size_t i = 0; i < n; ++i) out[i] = b;
        };
        return session_table(std::move(o));
    }
};

std::shared_ptr<fake_session> session_of(std::string principal) {
    auto s = std::make_shared<fake_session>();
    s->principal = std::move(principal);
    return s;
}

}  // namespace

TEST_CASE("a legacy session id is 128 bits of the CSPRNG as 32 lowercase hex digits") {
    rig r;
    r.draws = {0xab};
    auto table = r.table();
    auto s = session_of("alice");
    auto admitted = table.admit(s);
    REQUIRE_FALSE(admitted.refused);
    CHECK(s->id == "abababababababababababababababab");
    CHECK(table.size() == 1);
}

TEST_CASE("two sessions never share an id: a drawn id already in use is drawn again") {
    rig r;
    r.draws = {0x11, 0x11, 0x22};
    auto table = r.table();
    auto first = session_of("alice");
    auto second = session_of("bob");
    REQUIRE_FALSE(table.admit(first).refused);
    REQUIRE_FALSE(table.admit(second).refused);
    CHECK(first->id == std::string(32, '1'));
    CHECK(second->id == std::string(32, '2'));
    CHECK(r.next_draw == 3);
}

TEST_CASE("a principal at its share of the sessions is refused with a Retry-After until its first idle one expires") {
    rig r;
    auto table = r.table(8, 2, 60s);
    REQUIRE_FALSE(table.admit(session_of("alice")).refused);
    r.t += 20s;
    REQUIRE_FALSE(table.admit(session_of("alice")).refused);
    r.t += 10s;
    auto third = table.admit(session_of("alice"));
    REQUIRE(third.refused);
    CHECK(third.refused->why == session_table::refusal::kind::principal_share);
    CHECK(third.refused->holding == 2);
    // The first session has idled 30 s of its 60: it expires once it has idled for longer than that.
    CHECK(third.refused->retry_after == 31);
    CHECK(table.size() == 2);
    // Another principal is not affected.
    CHECK_FALSE(table.admit(session_of("bob")).refused);
}

TEST_CASE("a busy session counts as a full idle timeout in a refusal's Retry-After") {
    rig r;
    auto table = r.table(8, 1, 60s);
    auto s = session_of("alice");
    REQUIRE_FALSE(table.admit(s).refused);
    s->in_use = true;
    r.t += 50s;
    auto refused = table.admit(session_of("alice")).refused;
    REQUIRE(refused);
    CHECK(refused->retry_after == 61);
}

TEST_CASE("a full table refuses every principal with a Retry-After of one second") {
    rig r;
    auto table = r.table(2, 2, 60s);
    REQUIRE_FALSE(table.admit(session_of("alice")).refused);
    REQUIRE_FALSE(table.admit(session_of("bob")).refused);
    auto refused = table.admit(session_of("carol")).refused;
    REQUIRE(refused);
    CHECK(refused->why == session_table::refusal::kind::table_full);
    CHECK(refused->retry_after == 1);
}

TEST_CASE("a principal at its share gets back the slot of one of its sessions that idled out") {
    rig r;
    auto table = r.table(8, 1, 60s);
    auto old = session_of("alice");
    REQUIRE_FALSE(table.admit(old).refused);
    r.t += 61s;
    auto fresh = session_of("alice");
    auto admitted = table.admit(fresh);
    CHECK_FALSE(admitted.refused);
    REQUIRE(admitted.expired.size() == 1);
    CHECK(admitted.expired.front() == old);
    CHECK(table.held_by("alice") == 1);
}

TEST_CASE("a session idle for longer than the timeout is gone, and its lookup hands it back to be finished") {
    rig r;
    auto table = r.table(8, 2, 60s);
    auto s = session_of("alice");
    REQUIRE_FALSE(table.admit(s).refused);
    r.t += 60s;
    CHECK(table.find(s->id, "alice", false).live == s);  // idle for exactly the timeout: still alive
    r.t += 1ms;
    auto found = table.find(s->id, "alice", false);
    CHECK_FALSE(found.live);
    CHECK(found.expired == s);
    CHECK(table.size() == 0);
    CHECK_FALSE(table.find(s->id, "alice", false).expired);
}

TEST_CASE("a lookup that touches a session keeps it alive past the idle timeout") {
    rig r;
    auto table = r.table(8, 2, 60s);
    auto s = session_of("alice");
    REQUIRE_FALSE(table.admit(s).refused);
    for (int i = 0; i < 5; ++i) {
        r.t += 50s;
        REQUIRE(table.find(s->id, "alice", true).live == s);
    }
    r.t += 50s;
    CHECK(table.find(s->id, "alice", false).live == s);
    r.t += 11s;
    CHECK_FALSE(table.find(s->id, "alice", false).live);
}

TEST_CASE("a session with something in flight does not expire however long it runs") {
    rig r;
    auto table = r.table(8, 2, 60s);
    auto s = session_of("alice");
    REQUIRE_FALSE(table.admit(s).refused);
    s->in_use = true;
    r.t += 10min;
    CHECK(table.sweep().empty());
    CHECK(table.find(s->id, "alice", false).live == s);
    // When it is done, its idle clock starts again.
    s->in_use = false;
    table.touch(*s);
    r.t += 59s;
    CHECK(table.find(s->id, "alice", false).live == s);
}

TEST_CASE("a session of another principal is as good as unknown") {
    rig r;
    auto table = r.table();
    auto s = session_of("alice");
    REQUIRE_FALSE(table.admit(s).refused);
    auto found = table.find(s->id, "mallory", true);
    CHECK_FALSE(found.live);
    CHECK_FALSE(found.expired);
    CHECK(table.size() == 1);
    CHECK_FALSE(table.find("no-such-session", "alice", true).live);
}

TEST_CASE("the sweep takes out the sessions idle for longer than the timeout, at most once a second") {
    rig r;
    auto table = r.table(8, 4, 60s);
    auto first = session_of("alice");
    auto active = session_of("bob");
    REQUIRE_FALSE(table.admit(first).refused);
    REQUIRE_FALSE(table.admit(active).refused);
    r.t += 500ms;
    auto second = session_of("alice");
    REQUIRE_FALSE(table.admit(second).refused);
    r.t += 59'700ms;  // first and bob idle 60.2 s, second 59.7 s
    table.touch(*active);
    auto ended = table.sweep();
    REQUIRE(ended.size() == 1);
    CHECK(ended.front() == first);
    r.t += 500ms;  // second has idled 60.2 s now, but the last sweep was half a second ago
    CHECK(table.sweep().empty());
    CHECK(table.size() == 2);
    r.t += 500ms;
    ended = table.sweep();
    REQUIRE(ended.size() == 1);
    CHECK(ended.front() == second);
    CHECK(table.size() == 1);
    CHECK(table.held_by("alice") == 0);
}

TEST_CASE("removing a session frees its principal's slot, and removing it again does nothing") {
    rig r;
    auto table = r.table(8, 1, 60s);
    auto s = session_of("alice");
    REQUIRE_FALSE(table.admit(s).refused);
    REQUIRE(table.admit(session_of("alice")).refused);
    CHECK(table.remove(s));
    CHECK_FALSE(table.remove(s));
    CHECK(table.held_by("alice") == 0);
    CHECK_FALSE(table.find(s->id, "alice", true).live);
    CHECK_FALSE(table.admit(session_of("alice")).refused);
}

TEST_CASE("a stop takes every session out of the table") {
    rig r;
    auto table = r.table();
    REQUIRE_FALSE(table.admit(session_of("alice")).refused);
    REQUIRE_FALSE(table.admit(session_of("bob")).refused);
    CHECK(table.take_all().size() == 2);
    CHECK(table.size() == 0);
    CHECK(table.held_by("alice") == 0);
}
