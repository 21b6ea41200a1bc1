// The journal store conformance battery: every rule of core::journal_store, written against the
// interface alone, run once per fixture in AIRLOCK_JOURNAL_STORE_FIXTURES.

#include "tests/store/store_fixtures.hpp"
#include "tests/support/random_numbers.hpp"

#include "core/canonical_json.hpp"
#include "core/journal.hpp"
#include "core/sha256.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

using namespace airlock::core;
using namespace airlock::testing;  // the fixtures, run_awaitable and run_concurrently

namespace {

constexpr char const* t0 = "2026-11-30T08:00:00Z";

new_record admitted(std::string const& agent = "triage", std::string const& at = t0) {
    boost::json::object a;
    a["name"] = agent;
    a["version"] = "1.0.0";
    a["digest"] = "sha256:00";
    boost::json::object body;
    body["agent"] = std::move(a);
    body["input"] = "summarise the ticket";
    body["input_label"] = boost::json::object{{"trust", "trusted"}, {"sensitivity", "internal"}};
    body["admitted_at"] = at;
    return {record_kind::run_admitted, std::move(body)};
}

new_record started(std::string const& effect_key) {
    boost::json::object body;
    body["effect_key"] = effect_key;
    body["target"] = "tool";
    body["tool"] = "tool://ledger/post";
    body["arguments"] = boost::json::object{{"amount", 125}};
    body["mutates"] = true;
    body["attempt"] = 1;
    return {record_kind::effect_started, std::move(body)};
}

new_record done(std::string const& effect_key) {
    boost::json::object body;
    body["effect_key"] = effect_key;
    body["output"] = boost::json::object{{"ok", true}};
    body["output_label"] = boost::json::object{{"trust", "untrusted"}};
    return {record_kind::effect_done, std::move(body)};
}

new_record note(std::string const& text) { return {record_kind::note, boost::json::object{{"text", text}}}; }

new_record sealed_with(std::string const& status) {
    return {record_kind::run_sealed, boost::json::object{{"status", status}, {"reason", "test"}, {"chain_head", ""}}};
}

new_record of_kind(record_kind k) {
    return {k, boost::json::object{{"effect_key", "k"}, {"tool", "tool://ledger/post"}, {"approved", true}}};
}

// A note whose canonical body is exactly `size` bytes: {"text":"xxx…"} costs 11 bytes around the text.
new_record note_of_canonical_size(std::size_t size) {
    auto n = note(std::string(size - 11, 'x'));
    REQUIRE(canonical(boost::json::value(n.body)).value().size() == size);
    return n;
}

result<std::vector<record>> append(journal_store& s, std::string const& run, std::vector<new_record> batch) {
    return run_awaitable(s.async_append(run, std::move(batch)));
}

std::vector<record> read(journal_store& s, std::string const& run, std::uint64_t from_seq = 1) {
    auto r = run_awaitable(s.async_read(run, from_seq));
    REQUIRE(r.has_value());
    return *r;
}

std::optional<run_summary> head(journal_store& s, std::string const& run) {
    auto r = run_awaitable(s.async_head(run));
    REQUIRE(r.has_value());
    return *r;
}

// Admits a run and returns its records so far.
std::vector<record> admit(journal_store& s, std::string const& run, std::string const& agent = "triage",
                          std::string const& at = t0) {
    auto r = append(s, run, {admitted(agent, at)});
    if (!r) FAIL("admitting " << run << ": " << r.error());
    return *r;
}

std::string error_code(result<std::vector<record>> const& r) { return r.has_value() ? "ok" : r.error().code; }

// "ok", or the fault as text, so a failing CHECK shows why the chain did not verify.
std::string verdict(std::optional<chain_fault> const& f) {
    return f ? "seq " + std::to_string(f->seq) + ": " + f->reason : "ok";
}

std::string stored_verdict(journal_store& s, std::string const& run) {
    auto v = run_awaitable(s.async_verify(run));
    REQUIRE(v.has_value());
    return verdict(*v);
}

std::vector<std::uint64_t> seqs(std::vector<record> const& records) {
    std::vector<std::uint64_t> out;
    for (auto const& r : records) out.push_back(r.seq);
    return out;
}

std::vector<std::uint64_t> one_to(std::uint64_t n) {
    std::vector<std::uint64_t> out;
    for (std::uint64_t i = 1; i <= n; ++i) out.push_back(i);
    return out;
}

std::vector<std::string> ids(run_page const& page) {
    std::vector<std::string> out;
    for (auto const& r : page.runs) out.push_back(r.run_id);
    return out;
}

run_page runs(journal_store& s, run_filter f) {
    auto r = run_awaitable(s.async_runs(std::move(f)));
    REQUIRE(r.has_value());
    return *r;
}

// What a run looks like from outside, for "nothing changed" checks.
struct snapshot {
    std::vector<std::string> hashes;
    std::optional<std::uint64_t> head_seq;
    std::optional<std::string> status;
    bool sealed = false;
    friend bool operator==(snapshot const&, snapshot const&) = default;
};

snapshot snapshot_of(journal_store& s, std::string const& run) {
    snapshot out;
    for (auto const& r : read(s, run)) out.hashes.push_back(to_hex(r.hash));
    if (auto h = head(s, run)) {
        out.head_seq = h->head_seq;
        out.status = h->status;
        out.sealed = h->sealed;
    }
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------- chain

TEMPLATE_TEST_CASE("appended records get seq from 1 and a hash chain from the all-zero genesis", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto appended = append(*f.store, "run-1", {admitted(), started("run-1/000001/tool"), done("run-1/000001/tool")});
    REQUIRE(appended.has_value());
    REQUIRE(appended->size() == 3);
    CHECK(seqs(*appended) == one_to(3));
    CHECK((*appended)[0].prev_hash == sha256_digest{});
    CHECK((*appended)[1].prev_hash == (*appended)[0].hash);
    CHECK((*appended)[2].prev_hash == (*appended)[1].hash);
    for (auto const& r : *appended) CHECK(r.run_id == "run-1");
    CHECK(verdict(verify_chain(*appended)) == "ok");

    auto more = append(*f.store, "run-1", {note("next")});
    REQUIRE(more.has_value());
    CHECK(more->front().seq == 4);
    CHECK(more->front().prev_hash == (*appended)[2].hash);
}

TEMPLATE_TEST_CASE("a run reads back exactly the records that were appended", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto first = append(*f.store, "run-1", {admitted(), started("run-1/000001/tool")});
    auto second = append(*f.store, "run-1", {done("run-1/000001/tool"), note("ü \"quoted\" \n")});
    REQUIRE(first.has_value());
    REQUIRE(second.has_value());
    std::vector<record> expected = *first;
    expected.insert(expected.end(), second->begin(), second->end());

    auto stored = read(*f.store, "run-1");
    REQUIRE(stored.size() == expected.size());
    for (std::size_t i = 0; i < stored.size(); ++i) {
        INFO("seq " << i + 1);
        CHECK(stored[i].run_id == expected[i].run_id);
        CHECK(stored[i].seq == expected[i].seq);
        CHECK(stored[i].kind == expected[i].kind);
        CHECK(stored[i].body == expected[i].body);
        CHECK(stored[i].prev_hash == expected[i].prev_hash);
        CHECK(stored[i].hash == expected[i].hash);
    }
    CHECK(verdict(verify_chain(stored)) == "ok");
}

TEMPLATE_TEST_CASE("numbers of every magnitude read back to the bit as they were appended, and the chain verifies",
                   "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    auto numbers = number_edges();
    auto random = random_doubles(4000, 20261201);
    numbers.insert(numbers.end(), random.begin(), random.end());
    // Integers past what a double holds exactly, each end of int64 and uint64 among them.
    std::vector<boost::json::value> integers{9007199254740993LL, -9007199254740993LL, INT64_MAX, INT64_MIN,
                                             std::uint64_t{9223372036854775808ULL}, UINT64_MAX};
    std::size_t const per_record = 400;
    for (std::size_t at = 0; at < numbers.size(); at += per_record) {
        boost::json::array chunk;
        for (std::size_t i = at; i < std::min(numbers.size(), at + per_record); ++i) chunk.push_back(numbers[i]);
        auto rec = started("run-1/" + std::to_string(at) + "/tool");
        rec.body["arguments"] = boost::json::object{{"values", std::move(chunk)}, {"integers", boost::json::array(integers.begin(), integers.end())}};
        REQUIRE(error_code(append(*f.store, "run-1", {rec})) == "ok");
    }
    auto stored = read(*f.store, "run-1");
    REQUIRE(stored.size() == 1 + (numbers.size() + per_record - 1) / per_record);
    std::size_t checked = 0, differing = 0;
    for (std::size_t r = 1; r < stored.size(); ++r) {
        auto const& args = stored[r].body.at("arguments").as_object();
        auto const& values = args.at("values").as_array();
        for (std::size_t i = 0; i < values.size(); ++i, ++checked) {
            double want = numbers[(r - 1) * per_record + i];
            if (!same_number(values[i], want)) {
                if (++differing <= 5) UNSCOPED_INFO("stored " << boost::json::serialize(values[i]) << " for " << format_es_number(want));
            }
        }
        CHECK(args.at("integers") == boost::json::array(integers.begin(), integers.end()));
    }
    CHECK(checked == numbers.size());
    CHECK(differing == 0);
    CHECK(stored_verdict(*f.store, "run-1") == "ok");
    CHECK(verdict(verify_chain(stored)) == "ok");
}

TEMPLATE_TEST_CASE("a body nested as deep as airlock reads any value is stored and read back; a deeper one is refused",
                   "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    // The arguments of a call nest as deep as the door lets a message nest, and deeper than a record's
    // own envelope, so the reader must reach past max_json_depth.
    for (std::size_t depth : {std::size_t{30}, std::size_t{33}, max_json_depth, max_record_depth - 2}) {
        INFO("arguments " << depth << " deep");
        auto rec = started("run-1/" + std::to_string(depth) + "/tool");
        rec.body["arguments"] = nested_objects(depth);
        REQUIRE(error_code(append(*f.store, "run-1", {rec})) == "ok");
    }
    auto before = snapshot_of(*f.store, "run-1");
    auto too_deep = started("run-1/deeper/tool");
    too_deep.body["arguments"] = nested_objects(max_record_depth - 1);  // the record: 1 + body + arguments
    auto refused = append(*f.store, "run-1", {too_deep});
    CHECK(error_code(refused) == "too_deep");
    CHECK(snapshot_of(*f.store, "run-1") == before);
    auto stored = read(*f.store, "run-1");
    REQUIRE(stored.size() == 5);
    CHECK(stored.back().body.at("arguments") == nested_objects(max_record_depth - 2));
    CHECK(stored_verdict(*f.store, "run-1") == "ok");
}

TEMPLATE_TEST_CASE("every record kind can be stored and read back", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    std::vector<record_kind> kinds{record_kind::effect_done,   record_kind::effect_failed,
                                   record_kind::policy_denied, record_kind::approval_requested,
                                   record_kind::approval_decided, record_kind::note};
    for (auto k : kinds) {
        INFO(to_string(k));
        CHECK(error_code(append(*f.store, "run-1", {of_kind(k)})) == "ok");
    }
    CHECK(error_code(append(*f.store, "run-1", {started("e1")})) == "ok");
    CHECK(error_code(append(*f.store, "run-1", {sealed_with("failed")})) == "ok");
    auto stored = read(*f.store, "run-1");
    REQUIRE(stored.size() == kinds.size() + 3);
    for (std::size_t i = 0; i < kinds.size(); ++i) CHECK(stored[i + 1].kind == kinds[i]);
    CHECK(stored.back().kind == record_kind::run_sealed);
    CHECK(stored_verdict(*f.store, "run-1") == "ok");
}

TEMPLATE_TEST_CASE("verify reports an intact stored chain, and an unknown run as unknown", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    REQUIRE(append(*f.store, "run-1", {note("a"), note("b")}).has_value());
    CHECK(stored_verdict(*f.store, "run-1") == "ok");

    auto unknown = run_awaitable(f.store->async_verify("run-404"));
    REQUIRE_FALSE(unknown.has_value());
    CHECK(unknown.error().code == "unknown_run");
}

TEMPLATE_TEST_CASE("an empty append is refused and admits nothing", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    CHECK(error_code(append(*f.store, "run-1", {})) == "empty_append");
    CHECK_FALSE(head(*f.store, "run-1").has_value());
    admit(*f.store, "run-2");
    CHECK(error_code(append(*f.store, "run-2", {})) == "empty_append");
    CHECK(head(*f.store, "run-2")->head_seq == 1);
}

// ----------------------------------------------------------------------------------- admission

TEMPLATE_TEST_CASE("a run's first record must be run_admitted", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto r = append(*f.store, "run-1", {note("too early")});
    CHECK(error_code(r) == "not_admitted");
    CHECK_FALSE(head(*f.store, "run-1").has_value());
    CHECK(error_code(append(*f.store, "run-1", {started("e1")})) == "not_admitted");
}

TEMPLATE_TEST_CASE("a run cannot be admitted twice", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    CHECK(error_code(append(*f.store, "run-1", {admitted()})) == "not_admitted");
    CHECK(read(*f.store, "run-1").size() == 1);
}

TEMPLATE_TEST_CASE("a run admitted twice within one batch is refused whole", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    CHECK(error_code(append(*f.store, "run-1", {admitted(), note("x"), admitted()})) == "not_admitted");
    CHECK_FALSE(head(*f.store, "run-1").has_value());
}

TEMPLATE_TEST_CASE("claiming an idempotency key gives a fresh run once and the same run after", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto first = run_awaitable(f.store->async_claim_admission("order-42", "run-1"));
    REQUIRE(first.has_value());
    CHECK(first->fresh);
    CHECK(first->run_id == "run-1");

    auto again = run_awaitable(f.store->async_claim_admission("order-42", "run-2"));
    REQUIRE(again.has_value());
    CHECK_FALSE(again->fresh);
    CHECK(again->run_id == "run-1");

    auto other = run_awaitable(f.store->async_claim_admission("order-43", "run-2"));
    REQUIRE(other.has_value());
    CHECK(other->fresh);
    CHECK(other->run_id == "run-2");
}

TEMPLATE_TEST_CASE("an empty idempotency key is refused", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto r = run_awaitable(f.store->async_claim_admission("", "run-1"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "invalid_key");
}

TEMPLATE_TEST_CASE("a run id must be non-empty and free of NUL bytes", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    for (std::string id : {std::string(), std::string("run\0x", 5)}) {
        INFO("run id of " << id.size() << " bytes");
        CHECK(error_code(append(*f.store, id, {admitted()})) == "invalid_run_id");
        auto sealed = run_awaitable(f.store->async_seal(id, "failed", "x"));
        REQUIRE_FALSE(sealed.has_value());
        CHECK(sealed.error().code == "invalid_run_id");
    }
    CHECK(runs(*f.store, {}).runs.empty());
}

TEMPLATE_TEST_CASE("a run id is any UTF-8 but NUL, and runs list in byte order whatever the characters",
                   "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    // Upper case before lower, a control character, two- three- and four-byte characters, and the
    // longest id: a store that orders ids by a collation, or keeps them as anything but bytes, fails here.
    std::string longest;
    for (int i = 0; i < 64; ++i) longest += "\xc3\xa9";  // é, 128 bytes
    std::vector<std::string> ids_in_order = {"A b", "a", "a\x01", "z", "\xc3\xa9t\xc3\xa9", longest,
                                             "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    for (auto it = ids_in_order.rbegin(); it != ids_in_order.rend(); ++it) admit(*f.store, *it);
    CHECK(ids(runs(*f.store, {})) == ids_in_order);
    for (auto const& id : ids_in_order) {
        CHECK(head(*f.store, id)->run_id == id);
        CHECK(read(*f.store, id).size() == 1);
        CHECK(stored_verdict(*f.store, id) == "ok");
    }
    run_filter paged;
    paged.limit = 3;
    paged.cursor = std::string("a");
    CHECK(ids(runs(*f.store, paged)) == std::vector<std::string>(ids_in_order.begin() + 2, ids_in_order.begin() + 5));
    // What cannot be a run id is refused by name, before anything is written.
    for (std::string bad : {std::string(129, 'x'), std::string("\xff\xfe"), std::string("run-\xc3"),
                            std::string("\xed\xa0\x80")}) {
        INFO("run id of " << bad.size() << " bytes");
        CHECK(error_code(append(*f.store, bad, {admitted()})) == "invalid_run_id");
    }
    CHECK(runs(*f.store, {}).runs.size() == ids_in_order.size());
}

// -------------------------------------------------------------------------------- exactly once

TEMPLATE_TEST_CASE("a second effect_started for the same effect key is refused", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    CHECK(error_code(append(*f.store, "run-1", {started("run-1/000001/tool")})) == "ok");
    CHECK(error_code(append(*f.store, "run-1", {done("run-1/000001/tool")})) == "ok");
    auto before = snapshot_of(*f.store, "run-1");

    auto again = append(*f.store, "run-1", {started("run-1/000001/tool")});
    CHECK(error_code(again) == "duplicate_effect");
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().message.find("run-1/000001/tool") != std::string::npos);
    CHECK(snapshot_of(*f.store, "run-1") == before);

    CHECK(error_code(append(*f.store, "run-1", {started("run-1/000002/tool")})) == "ok");
}

TEMPLATE_TEST_CASE("the same effect key may start once in each run", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    admit(*f.store, "run-2");
    CHECK(error_code(append(*f.store, "run-1", {started("step-1")})) == "ok");
    CHECK(error_code(append(*f.store, "run-2", {started("step-1")})) == "ok");
}

TEMPLATE_TEST_CASE("an effect started twice within one batch is refused and nothing is written", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    auto before = snapshot_of(*f.store, "run-1");
    CHECK(error_code(append(*f.store, "run-1", {started("e1"), done("e1"), started("e1")})) == "duplicate_effect");
    CHECK(snapshot_of(*f.store, "run-1") == before);
    // The refused batch reserved nothing: the key is still free.
    CHECK(error_code(append(*f.store, "run-1", {started("e1")})) == "ok");
}

TEMPLATE_TEST_CASE("an effect_started without an effect key is refused", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    CHECK(error_code(append(*f.store, "run-1", {{record_kind::effect_started, {{"tool", "tool://x/y"}}}})) ==
          "invalid_record");
    CHECK(error_code(append(*f.store, "run-1", {{record_kind::effect_started, {{"effect_key", 7}}}})) ==
          "invalid_record");
    CHECK(error_code(append(*f.store, "run-1", {{record_kind::effect_started, {{"effect_key", ""}}}})) ==
          "invalid_record");
    CHECK(read(*f.store, "run-1").size() == 1);
}

TEMPLATE_TEST_CASE("of many coroutines racing to start one effect, exactly one wins", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    std::mutex m;
    std::map<std::string, int> outcomes;
    auto racer = [](journal_store& s, std::mutex& m, std::map<std::string, int>& outcomes) -> boost::asio::awaitable<void> {
        // A named batch, not a braced list in the co_await expression: GCC 12 mishandles the
        // lifetime of initializer_list temporaries that span a suspension.
        std::vector<new_record> batch{started("run-1/000001/tool")};
        auto r = co_await s.async_append("run-1", std::move(batch));
        std::lock_guard lock(m);
        ++outcomes[r.has_value() ? std::string("ok") : r.error().code];
    };
    std::vector<boost::asio::awaitable<void>> ops;
    for (int i = 0; i < 32; ++i) ops.push_back(racer(*f.store, m, outcomes));
    run_concurrently(std::move(ops), 4);

    CHECK(outcomes == std::map<std::string, int>{{"ok", 1}, {"duplicate_effect", 31}});
    auto stored = read(*f.store, "run-1");
    CHECK(std::count_if(stored.begin(), stored.end(), [](record const& r) { return r.kind == record_kind::effect_started; }) == 1);
}

// -------------------------------------------------------------------------------------- sealing

TEMPLATE_TEST_CASE("sealing appends run_sealed with the status, the reason and the chain head", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto admitted_records = admit(*f.store, "run-1");
    auto last = append(*f.store, "run-1", {note("work")});
    REQUIRE(last.has_value());

    auto sealed = run_awaitable(f.store->async_seal("run-1", "succeeded", "the model finished"));
    REQUIRE(sealed.has_value());
    CHECK(sealed->kind == record_kind::run_sealed);
    CHECK(sealed->seq == 3);
    CHECK(sealed->prev_hash == last->back().hash);
    CHECK(sealed->body.at("status").as_string() == "succeeded");
    CHECK(sealed->body.at("reason").as_string() == "the model finished");
    CHECK(sealed->body.at("chain_head").as_string() == to_hex(last->back().hash));

    auto h = head(*f.store, "run-1");
    REQUIRE(h.has_value());
    CHECK(h->sealed);
    CHECK(h->status == "succeeded");
    CHECK(h->head_seq == 3);
    CHECK(h->head_hash == sealed->hash);
    CHECK(stored_verdict(*f.store, "run-1") == "ok");
}

TEMPLATE_TEST_CASE("appends to a sealed run are refused", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    REQUIRE(run_awaitable(f.store->async_seal("run-1", "cancelled", "operator")).has_value());
    auto before = snapshot_of(*f.store, "run-1");

    CHECK(error_code(append(*f.store, "run-1", {note("late")})) == "sealed");
    CHECK(error_code(append(*f.store, "run-1", {started("e1")})) == "sealed");
    auto again = run_awaitable(f.store->async_seal("run-1", "failed", "twice"));
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().code == "sealed");
    CHECK(snapshot_of(*f.store, "run-1") == before);
}

TEMPLATE_TEST_CASE("an appended run_sealed record seals the run like seal does", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    CHECK(error_code(append(*f.store, "run-1", {note("work"), sealed_with("quarantined")})) == "ok");
    auto h = head(*f.store, "run-1");
    REQUIRE(h.has_value());
    CHECK(h->sealed);
    CHECK(h->status == "quarantined");
    CHECK(error_code(append(*f.store, "run-1", {note("late")})) == "sealed");
}

TEMPLATE_TEST_CASE("a batch with records after its run_sealed is refused whole", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    auto before = snapshot_of(*f.store, "run-1");
    CHECK(error_code(append(*f.store, "run-1", {sealed_with("succeeded"), note("after the seal")})) == "sealed");
    CHECK(snapshot_of(*f.store, "run-1") == before);
    CHECK_FALSE(head(*f.store, "run-1")->sealed);
}

TEMPLATE_TEST_CASE("sealing an unknown run is refused", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto r = run_awaitable(f.store->async_seal("run-404", "succeeded", "done"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "unknown_run");
    CHECK(r.error().message.find("run-404") != std::string::npos);
    CHECK_FALSE(head(*f.store, "run-404").has_value());
}

TEMPLATE_TEST_CASE("a run can only be sealed with a terminal status", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    for (auto status : {"running", "awaiting_approval", "done", "Succeeded", ""}) {
        INFO("status '" << status << "'");
        auto r = run_awaitable(f.store->async_seal("run-1", status, "bad"));
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "invalid_status");
        // An appended run_sealed is a record like any other: a bad one is an invalid record.
        CHECK(error_code(append(*f.store, "run-1", {sealed_with(status)})) == "invalid_record");
    }
    CHECK(error_code(append(*f.store, "run-1", {{record_kind::run_sealed, {{"reason", "no status"}}}})) ==
          "invalid_record");
    CHECK_FALSE(head(*f.store, "run-1")->sealed);
    CHECK(read(*f.store, "run-1").size() == 1);
    for (auto status : {"succeeded", "failed", "exhausted", "quarantined", "cancelled"}) {
        INFO("status '" << status << "'");
        std::string run = std::string("run-") + status;
        admit(*f.store, run);
        CHECK(run_awaitable(f.store->async_seal(run, status, "ok")).has_value());
    }
}

// ------------------------------------------------------------------------------- size and atomicity

TEMPLATE_TEST_CASE("a record one byte over 1 MiB is refused and the run is left unchanged", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    auto before = snapshot_of(*f.store, "run-1");
    auto r = append(*f.store, "run-1", {note("small"), note_of_canonical_size(max_record_bytes + 1)});
    CHECK(error_code(r) == "record_too_large");
    CHECK(snapshot_of(*f.store, "run-1") == before);
}

TEMPLATE_TEST_CASE("a record of exactly 1 MiB is stored whole", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    auto big = note_of_canonical_size(max_record_bytes);
    CHECK(error_code(append(*f.store, "run-1", {big})) == "ok");
    auto stored = read(*f.store, "run-1", 2);
    REQUIRE(stored.size() == 1);
    CHECK(stored[0].body == big.body);
    CHECK(stored_verdict(*f.store, "run-1") == "ok");
}

TEMPLATE_TEST_CASE("a batch with one bad record writes nothing", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    REQUIRE(append(*f.store, "run-1", {started("e1")}).has_value());
    auto before = snapshot_of(*f.store, "run-1");

    CHECK(error_code(append(*f.store, "run-1", {note("a"), done("e1"), started("e2"), started("e1")})) ==
          "duplicate_effect");
    CHECK(snapshot_of(*f.store, "run-1") == before);
    // The good records of the refused batch left no trace: e2 can still start, and seq carries on.
    auto next = append(*f.store, "run-1", {started("e2")});
    REQUIRE(next.has_value());
    CHECK(next->front().seq == 3);
    CHECK(stored_verdict(*f.store, "run-1") == "ok");
}

// --------------------------------------------------------------------------------------- reading

TEMPLATE_TEST_CASE("reading from a seq returns that record and the ones after it", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    REQUIRE(append(*f.store, "run-1", {note("2"), note("3"), note("4"), note("5")}).has_value());
    CHECK(seqs(read(*f.store, "run-1", 3)) == std::vector<std::uint64_t>{3, 4, 5});
    CHECK(seqs(read(*f.store, "run-1", 5)) == std::vector<std::uint64_t>{5});
    CHECK(read(*f.store, "run-1", 6).empty());
    CHECK(read(*f.store, "run-1", 1000).empty());
    CHECK(seqs(read(*f.store, "run-1")) == one_to(5));
    CHECK(read(*f.store, "run-1", 3).front().body.at("text").as_string() == "3");
}

TEMPLATE_TEST_CASE("reading a run that was never admitted returns no records", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    CHECK(read(*f.store, "run-2").empty());
    // A refused first append leaves nothing to read either.
    CHECK(error_code(append(*f.store, "run-3", {note("too early")})) == "not_admitted");
    CHECK(read(*f.store, "run-3").empty());
}

TEMPLATE_TEST_CASE("head names the last record, the agent and the admission time", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    CHECK_FALSE(head(*f.store, "run-1").has_value());
    admit(*f.store, "run-1", "billing", "2026-11-30T09:15:00Z");
    auto last = append(*f.store, "run-1", {note("a"), note("b")});
    REQUIRE(last.has_value());
    auto h = head(*f.store, "run-1");
    REQUIRE(h.has_value());
    CHECK(h->run_id == "run-1");
    CHECK(h->agent == "billing");
    CHECK(h->admitted_at == "2026-11-30T09:15:00Z");
    CHECK(h->status == "running");
    CHECK(h->head_seq == 3);
    CHECK(h->head_hash == last->back().hash);
    CHECK_FALSE(h->sealed);
}

TEMPLATE_TEST_CASE("a run's status follows its records", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    auto status = [&] { return head(*f.store, "run-1").value().status; };
    admit(*f.store, "run-1");
    CHECK(status() == "running");
    REQUIRE(append(*f.store, "run-1", {of_kind(record_kind::approval_requested)}).has_value());
    CHECK(status() == "awaiting_approval");
    REQUIRE(append(*f.store, "run-1", {of_kind(record_kind::approval_decided)}).has_value());
    CHECK(status() == "running");
    REQUIRE(append(*f.store, "run-1", {note("n"), started("e1"), done("e1")}).has_value());
    CHECK(status() == "running");
    REQUIRE(run_awaitable(f.store->async_seal("run-1", "exhausted", "max_turns")).has_value());
    CHECK(status() == "exhausted");
}

// ------------------------------------------------------------------------------------- run index

TEMPLATE_TEST_CASE("runs are listed in run id order and paged with a cursor", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    for (auto id : {"run-c", "run-a", "run-e", "run-b", "run-d"}) admit(*f.store, id);

    CHECK(ids(runs(*f.store, {})) == std::vector<std::string>{"run-a", "run-b", "run-c", "run-d", "run-e"});
    CHECK_FALSE(runs(*f.store, {}).next_cursor.has_value());

    run_filter page_filter;
    page_filter.limit = 2;
    auto p1 = runs(*f.store, page_filter);
    CHECK(ids(p1) == std::vector<std::string>{"run-a", "run-b"});
    REQUIRE(p1.next_cursor.has_value());

    page_filter.cursor = p1.next_cursor;
    auto p2 = runs(*f.store, page_filter);
    CHECK(ids(p2) == std::vector<std::string>{"run-c", "run-d"});
    REQUIRE(p2.next_cursor.has_value());

    page_filter.cursor = p2.next_cursor;
    auto p3 = runs(*f.store, page_filter);
    CHECK(ids(p3) == std::vector<std::string>{"run-e"});
    CHECK_FALSE(p3.next_cursor.has_value());
}

TEMPLATE_TEST_CASE("the last full page has no cursor when no run remains", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    for (auto id : {"run-a", "run-b", "run-c", "run-d"}) admit(*f.store, id);
    run_filter filter;
    filter.limit = 2;
    filter.cursor = "run-b";
    auto page = runs(*f.store, filter);
    CHECK(ids(page) == std::vector<std::string>{"run-c", "run-d"});
    CHECK_FALSE(page.next_cursor.has_value());
}

TEMPLATE_TEST_CASE("runs filter by status, agent and admission time", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1", "triage", "2026-11-30T08:00:00Z");
    admit(*f.store, "run-2", "billing", "2026-11-30T09:00:00Z");
    admit(*f.store, "run-3", "triage", "2026-11-30T10:00:00Z");
    admit(*f.store, "run-4", "billing", "2026-11-30T11:00:00Z");
    REQUIRE(run_awaitable(f.store->async_seal("run-1", "succeeded", "done")).has_value());
    REQUIRE(append(*f.store, "run-2", {of_kind(record_kind::approval_requested)}).has_value());
    REQUIRE(run_awaitable(f.store->async_seal("run-4", "failed", "tool failed")).has_value());

    auto with = [&](auto set) {
        run_filter filter;
        set(filter);
        return ids(runs(*f.store, filter));
    };
    using v = std::vector<std::string>;
    CHECK(with([](run_filter& x) { x.status = "running"; }) == v{"run-3"});
    CHECK(with([](run_filter& x) { x.status = "awaiting_approval"; }) == v{"run-2"});
    CHECK(with([](run_filter& x) { x.status = "succeeded"; }) == v{"run-1"});
    CHECK(with([](run_filter& x) { x.status = "cancelled"; }).empty());
    CHECK(with([](run_filter& x) { x.agent = "billing"; }) == v{"run-2", "run-4"});
    CHECK(with([](run_filter& x) { x.agent = "Billing"; }).empty());
    CHECK(with([](run_filter& x) { x.since = "2026-11-30T09:00:00Z"; }) == v{"run-2", "run-3", "run-4"});
    CHECK(with([](run_filter& x) { x.since = "2026-11-30T10:30:00Z"; }) == v{"run-4"});
    CHECK(with([](run_filter& x) {
              x.agent = "triage";
              x.since = "2026-11-30T09:00:00Z";
          }) == v{"run-3"});
    CHECK(with([](run_filter& x) {
              x.agent = "billing";
              x.status = "failed";
          }) == v{"run-4"});
}

TEMPLATE_TEST_CASE("paging a filtered run list skips runs that do not match", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1", "triage");
    admit(*f.store, "run-2", "billing");
    admit(*f.store, "run-3", "triage");
    admit(*f.store, "run-4", "billing");
    admit(*f.store, "run-5", "billing");
    run_filter filter;
    filter.agent = "triage";
    filter.limit = 1;
    auto p1 = runs(*f.store, filter);
    CHECK(ids(p1) == std::vector<std::string>{"run-1"});
    REQUIRE(p1.next_cursor.has_value());
    filter.cursor = p1.next_cursor;
    auto p2 = runs(*f.store, filter);
    CHECK(ids(p2) == std::vector<std::string>{"run-3"});
    // run-4 and run-5 remain, but neither matches: there is no next page.
    CHECK_FALSE(p2.next_cursor.has_value());
}

TEMPLATE_TEST_CASE("the run list shows each run's summary", "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1", "triage", "2026-11-30T08:00:00Z");
    auto sealed = run_awaitable(f.store->async_seal("run-1", "succeeded", "done"));
    REQUIRE(sealed.has_value());
    auto page = runs(*f.store, {});
    REQUIRE(page.runs.size() == 1);
    auto const& s = page.runs[0];
    CHECK(s.run_id == "run-1");
    CHECK(s.agent == "triage");
    CHECK(s.status == "succeeded");
    CHECK(s.admitted_at == "2026-11-30T08:00:00Z");
    CHECK(s.head_seq == 2);
    CHECK(s.head_hash == sealed->hash);
    CHECK(s.sealed);
}

// The run_admitted record of a run started by `who`, in the form `shape` says: "rest" (the agent
// runtime: body.principal), "gateway" (a session: body.input.principal) or "agent input" (an agent
// run whose caller put a principal in its input, which claims nothing).
new_record admitted_by(std::string const& who, std::string const& shape) {
    auto rec = admitted();
    if (shape == "rest") {
        rec.body["mode"] = "agent";
        rec.body["principal"] = who;
    } else if (shape == "gateway") {
        rec.body["input"] = boost::json::object{{"principal", who}, {"session", ""}};
    } else {
        rec.body["mode"] = "agent";
        rec.body["input"] = boost::json::object{{"principal", who}};
    }
    return rec;
}

// run-1 started by alice over REST, run-2 and run-3 gateway sessions of bob and alice, run-4 an
// agent run whose input names bob, run-5 a run started by nobody.
void admit_owned_runs(journal_store& s) {
    REQUIRE(append(s, "run-1", {admitted_by("alice", "rest")}).has_value());
    REQUIRE(append(s, "run-2", {admitted_by("bob", "gateway")}).has_value());
    REQUIRE(append(s, "run-3", {admitted_by("alice", "gateway")}).has_value());
    REQUIRE(append(s, "run-4", {admitted_by("bob", "agent input")}).has_value());
    admit(s, "run-5");
}

TEMPLATE_TEST_CASE("a run is owned by the principal that started it, or by the gateway session's principal",
                   "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit_owned_runs(*f.store);
    REQUIRE(run_awaitable(f.store->async_seal("run-1", "succeeded", "done")).has_value());
    CHECK(head(*f.store, "run-1")->principal == "alice");  // still after more records
    CHECK(head(*f.store, "run-2")->principal == "bob");
    CHECK(head(*f.store, "run-4")->principal.empty());
    CHECK(head(*f.store, "run-5")->principal.empty());
    CHECK(runs(*f.store, {}).runs.front().principal == "alice");
}

TEMPLATE_TEST_CASE("runs filter by owner, and an empty owner matches no run, not the runs owned by nobody",
                   "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit_owned_runs(*f.store);
    auto owned_by = [&](std::string who) {
        run_filter filter;
        filter.principal = std::move(who);
        return ids(runs(*f.store, filter));
    };
    using v = std::vector<std::string>;
    CHECK(owned_by("alice") == v{"run-1", "run-3"});
    CHECK(owned_by("bob") == v{"run-2"});
    CHECK(owned_by("carol").empty());
    CHECK(owned_by("").empty());
}

// ------------------------------------------------------------------------------------ concurrency

namespace {

struct acked_batch {
    int writer;
    int index;
    std::vector<record> records;
};

struct ack_log {
    std::mutex m;
    std::vector<acked_batch> batches;
    std::vector<std::string> errors;
};

// Appends `batches` batches of `batch_size` notes to one run, one batch at a time, logging each ack.
boost::asio::awaitable<void> append_notes(journal_store& store, std::string run, int writer, int batches,
                                          std::size_t batch_size, ack_log& log) {
    for (int b = 0; b < batches; ++b) {
        std::vector<new_record> batch;
        for (std::size_t i = 0; i < batch_size; ++i)
            batch.push_back(note(run + "/w" + std::to_string(writer) + "/b" + std::to_string(b) + "/i" + std::to_string(i)));
        auto r = co_await store.async_append(run, std::move(batch));
        std::lock_guard lock(log.m);
        if (r.has_value())
            log.batches.push_back({writer, b, std::move(*r)});
        else
            log.errors.push_back(r.error().code + ": " + r.error().message);
    }
}

boost::asio::awaitable<void> admit_then_append(journal_store& store, std::string run, int writer, int batches,
                                               ack_log& log) {
    std::vector<new_record> batch{admitted()};
    auto r = co_await store.async_append(run, std::move(batch));
    if (!r.has_value()) {
        std::lock_guard lock(log.m);
        log.errors.push_back(r.error().code + ": " + r.error().message);
        co_return;
    }
    co_await append_notes(store, run, writer, batches, 2, log);
}

// Every acknowledged batch is stored at the seqs it was acknowledged with, contiguously (a batch is
// never interleaved with another), and each writer's batches are stored in the order it sent them.
void check_acks_against_store(journal_store& store, ack_log const& log) {
    std::map<std::string, std::vector<record>> stored;
    std::map<std::pair<std::string, int>, std::uint64_t> last_seq_of_writer;
    std::vector<acked_batch const*> ordered;
    for (auto const& b : log.batches) ordered.push_back(&b);
    std::sort(ordered.begin(), ordered.end(),
              [](auto const* a, auto const* b) { return std::tie(a->writer, a->index) < std::tie(b->writer, b->index); });
    for (auto const* b : ordered) {
        REQUIRE_FALSE(b->records.empty());
        auto const& run = b->records.front().run_id;
        if (!stored.contains(run)) stored[run] = read(store, run);
        auto const& records = stored[run];
        for (std::size_t i = 0; i < b->records.size(); ++i) {
            auto const& acked = b->records[i];
            CHECK(acked.seq == b->records.front().seq + i);
            REQUIRE(acked.seq >= 1);
            REQUIRE(acked.seq <= records.size());
            CHECK(records[acked.seq - 1].hash == acked.hash);
            CHECK(records[acked.seq - 1].body == acked.body);
        }
        auto& last = last_seq_of_writer[{run, b->writer}];
        CHECK(b->records.front().seq > last);
        last = b->records.back().seq;
    }
}

}  // namespace

TEMPLATE_TEST_CASE("concurrent appends to one run keep seq contiguous and the chain valid", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    admit(*f.store, "run-1");
    constexpr int writers = 16;
    constexpr int batches = 20;
    ack_log log;
    std::vector<boost::asio::awaitable<void>> ops;
    std::size_t expected = 1;
    for (int w = 0; w < writers; ++w) {
        std::size_t batch_size = static_cast<std::size_t>(w % 3) + 1;
        expected += batch_size * batches;
        ops.push_back(append_notes(*f.store, "run-1", w, batches, batch_size, log));
    }
    run_concurrently(std::move(ops), 4);

    CHECK(log.errors.empty());
    CHECK(log.batches.size() == static_cast<std::size_t>(writers * batches));
    auto stored = read(*f.store, "run-1");
    CHECK(stored.size() == expected);
    CHECK(seqs(stored) == one_to(expected));
    CHECK(verdict(verify_chain(stored)) == "ok");
    CHECK(stored_verdict(*f.store, "run-1") == "ok");
    CHECK(head(*f.store, "run-1")->head_seq == expected);
    check_acks_against_store(*f.store, log);
}

TEMPLATE_TEST_CASE("concurrent appends to many runs keep every chain valid", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    constexpr int runs_admitted_before = 12;
    constexpr int runs_admitted_during = 12;
    constexpr int batches = 10;
    ack_log log;
    std::vector<boost::asio::awaitable<void>> ops;
    std::vector<std::string> run_ids;
    for (int r = 0; r < runs_admitted_before; ++r) {
        auto run = "run-b" + std::to_string(100 + r);
        admit(*f.store, run);
        run_ids.push_back(run);
        // Two writers per run, so runs see contention as well as each other.
        ops.push_back(append_notes(*f.store, run, 0, batches, 1, log));
        ops.push_back(append_notes(*f.store, run, 1, batches, 2, log));
    }
    for (int r = 0; r < runs_admitted_during; ++r) {
        auto run = "run-d" + std::to_string(100 + r);
        run_ids.push_back(run);
        ops.push_back(admit_then_append(*f.store, run, 0, batches, log));
    }
    run_concurrently(std::move(ops), 4);

    CHECK(log.errors.empty());
    for (auto const& run : run_ids) {
        INFO(run);
        auto stored = read(*f.store, run);
        std::size_t expected = 1 + (run.starts_with("run-b") ? batches * 3 : batches * 2);
        CHECK(seqs(stored) == one_to(expected));
        CHECK(stored_verdict(*f.store, run) == "ok");
        for (auto const& r : stored) CHECK(r.run_id == run);
    }
    check_acks_against_store(*f.store, log);

    run_filter all;
    all.limit = 1000;
    CHECK(runs(*f.store, all).runs.size() == run_ids.size());
}

TEMPLATE_TEST_CASE("of many coroutines claiming one idempotency key, exactly one gets a fresh run", "[journal_store]",
                   AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    std::mutex m;
    std::vector<admission> got;
    auto claimer = [](journal_store& s, std::string proposed, std::mutex& m,
                      std::vector<admission>& got) -> boost::asio::awaitable<void> {
        auto r = co_await s.async_claim_admission("order-42", std::move(proposed));
        std::lock_guard lock(m);
        if (r.has_value()) got.push_back(*r);
    };
    std::vector<boost::asio::awaitable<void>> ops;
    for (int i = 0; i < 32; ++i) ops.push_back(claimer(*f.store, "run-" + std::to_string(i), m, got));
    run_concurrently(std::move(ops), 4);

    REQUIRE(got.size() == 32);
    auto fresh = std::count_if(got.begin(), got.end(), [](admission const& a) { return a.fresh; });
    CHECK(fresh == 1);
    std::set<std::string> run_ids;
    for (auto const& a : got) run_ids.insert(a.run_id);
    CHECK(run_ids.size() == 1);
}

TEMPLATE_TEST_CASE("a deferred append is chained and read back like any other, in the order it was submitted",
                   "[journal_store]", AIRLOCK_JOURNAL_STORE_FIXTURES) {
    TestType f;
    REQUIRE(append(*f.store, "run-1", {admitted(), started("run-1/000001/tool")}).has_value());
    auto deferred = run_awaitable(f.store->async_append_deferred("run-1", one_record(done("run-1/000001/tool"))));
    REQUIRE(deferred.has_value());
    REQUIRE(deferred->size() == 1);
    CHECK(deferred->front().seq == 3);
    auto more = append(*f.store, "run-1", {note("after")});
    REQUIRE(more.has_value());
    CHECK(more->front().seq == 4);
    auto stored = read(*f.store, "run-1");
    REQUIRE(stored.size() == 4);
    CHECK(stored[2].kind == record_kind::effect_done);
    CHECK(verdict(verify_chain(stored)) == "ok");
}
