#include "core/journal.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"

#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace airlock::core;

namespace {

boost::json::object obj(std::string_view json) { return boost::json::parse(json).as_object(); }

sha256_digest openssl_sha256(std::string_view bytes) {
    sha256_digest d{};
    SHA256(reinterpret_cast<unsigned char const*>(bytes.data()), bytes.size(), d.data());
    return d;
}

std::string raw(sha256_digest const& d) { return std::string(reinterpret_cast<char const*>(d.data()), d.size()); }

// A five-record chain of run "run-1", built through chain_next.
std::vector<record> sample_chain() {
    std::vector<new_record> news{
        {record_kind::run_admitted, obj(R"({"agent":{"name":"triage","version":"1","digest":"ab"},"input":"hi"})")},
        {record_kind::effect_started, obj(R"({"effect_key":"run-1/000001/tool","tool":"tool://ledger/post"})")},
        {record_kind::effect_done, obj(R"({"effect_key":"run-1/000001/tool","output":{"amount":125}})")},
        {record_kind::note, obj(R"({"text":"checked"})")},
        {record_kind::run_sealed, obj(R"({"status":"succeeded","reason":"done","chain_head":"x"})")},
    };
    std::vector<record> chain;
    std::optional<record> prev;
    for (auto const& n : news) {
        auto r = chain_next("run-1", prev, n);
        REQUIRE(r.has_value());
        chain.push_back(*r);
        prev = *r;
    }
    return chain;
}

// Rewrites a record's hash to match its (tampered) contents, as a careful forger would.
void rehash(record& r) { r.hash = record_hash(r.prev_hash, r.run_id, r.seq, r.kind, r.body).value(); }

// "ok", or the fault as text, so a failing CHECK shows why the chain did not verify.
std::string verdict(std::optional<chain_fault> const& f) {
    return f ? "seq " + std::to_string(f->seq) + ": " + f->reason : "ok";
}

void require_same(record const& a, record const& b) {
    CHECK(a.run_id == b.run_id);
    CHECK(a.seq == b.seq);
    CHECK(a.kind == b.kind);
    CHECK(a.body == b.body);
    CHECK(a.prev_hash == b.prev_hash);
    CHECK(a.hash == b.hash);
}

// A body whose canonical form is exactly `size` bytes: {"text":"xxx…"} costs 11 bytes around the text.
boost::json::object body_of_canonical_size(std::size_t size) {
    boost::json::object o;
    o["text"] = std::string(size - 11, 'x');
    REQUIRE(canonical(boost::json::value(o)).value().size() == size);
    return o;
}

}  // namespace

TEST_CASE("the first record of a run links to the all-zero genesis hash") {
    auto r = chain_next("run-1", std::nullopt, {record_kind::run_admitted, obj(R"({"input":"hi"})")});
    REQUIRE(r.has_value());
    CHECK(r->seq == 1);
    CHECK(r->run_id == "run-1");
    CHECK(r->prev_hash == sha256_digest{});
    CHECK(r->hash != sha256_digest{});
}

TEST_CASE("a record's hash is SHA-256 of the previous hash followed by the canonical record") {
    // The documented bytes, written out by hand; the expected digests were computed with Python's
    // hashlib over the same bytes, so neither our canonicalizer nor our SHA-256 wrapper is trusted.
    std::string const first_bytes = std::string(32, '\0') +
                                    R"({"body":{"n":1,"text":"h)" "\xc3\xa9" R"(llo"},"kind":"note","run_id":"run-1","seq":1})";
    std::string const first_hex = "1f0b059651b303c6dc5a55ad82d499e7eed8a4db6d255c686e34f3336440243c";
    REQUIRE(to_hex(openssl_sha256(first_bytes)) == first_hex);

    // Member order in the body is deliberately not canonical.
    auto first = chain_next("run-1", std::nullopt, {record_kind::note, obj("{\"text\":\"h\xc3\xa9llo\",\"n\":1}")});
    REQUIRE(first.has_value());
    CHECK(to_hex(first->hash) == first_hex);

    std::string const second_bytes =
        raw(first->hash) +
        R"({"body":{"effect_key":"run-1/000001/tool","mutates":true},"kind":"effect_started","run_id":"run-1","seq":2})";
    std::string const second_hex = "73bf468190d3a264fcc60f786f844d37377220ee1ff81207dad2cb5076271302";
    REQUIRE(to_hex(openssl_sha256(second_bytes)) == second_hex);

    auto second = chain_next("run-1", std::optional<record>(*first),
                             {record_kind::effect_started, obj(R"({"mutates":true,"effect_key":"run-1/000001/tool"})")});
    REQUIRE(second.has_value());
    CHECK(second->seq == 2);
    CHECK(second->prev_hash == first->hash);
    CHECK(to_hex(second->hash) == second_hex);
}

TEST_CASE("record_hash agrees with the canonical JSON of the documented envelope for awkward values") {
    struct sample {
        std::string run_id;
        std::uint64_t seq;
        record_kind kind;
        std::string body;
    };
    std::vector<sample> samples{
        {"run \"quoted\" \\ \x01", 7, record_kind::policy_denied, R"({"b":[1,2.5,1e21,null,true],"a":{"\u20ac":"","\ud83d\ude00":0}})"},
        {"", std::numeric_limits<std::uint64_t>::max(), record_kind::approval_decided, "{}"},
        {"01J9ZQ3V5X", 1000000, record_kind::effect_failed, R"({"detail":"line\nbreak","neg":-0.0,"big":18446744073709551615})"},
    };
    sha256_digest prev{};
    prev[0] = 0xab;
    prev[31] = 0x01;
    for (auto const& s : samples) {
        INFO("run_id " << s.run_id << ", seq " << s.seq);
        boost::json::object envelope;
        envelope["body"] = obj(s.body);
        envelope["kind"] = to_string(s.kind);
        envelope["run_id"] = s.run_id;
        envelope["seq"] = s.seq;
        auto expected = openssl_sha256(raw(prev) + canonical(boost::json::value(envelope)).value());
        auto got = record_hash(prev, s.run_id, s.seq, s.kind, obj(s.body));
        REQUIRE(got.has_value());
        CHECK(to_hex(*got) == to_hex(expected));
    }
}

TEST_CASE("a body that has no canonical form is refused") {
    boost::json::object body;
    body["x"] = std::nan("");
    auto r = chain_next("run-1", std::nullopt, {record_kind::note, body});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "not_ijson");
    CHECK(r.error().message.find("body") != std::string::npos);
}

TEST_CASE("a record whose canonical body is one byte over 1 MiB is refused, not truncated") {
    auto r = chain_next("run-1", std::nullopt, {record_kind::note, body_of_canonical_size(max_record_bytes + 1)});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "record_too_large");
    CHECK(r.error().message.find(std::to_string(max_record_bytes + 1)) != std::string::npos);
}

TEST_CASE("a record whose canonical body is exactly 1 MiB is accepted whole") {
    auto body = body_of_canonical_size(max_record_bytes);
    auto r = chain_next("run-1", std::nullopt, {record_kind::note, body});
    REQUIRE(r.has_value());
    CHECK(r->body == body);
    CHECK(verdict(verify_chain({*r})) == "ok");
}

TEST_CASE("an intact chain verifies") {
    CHECK(verdict(verify_chain(sample_chain())) == "ok");
    CHECK(verdict(verify_chain({})) == "ok");
}

TEST_CASE("verify_chain names the record whose body value was flipped") {
    auto chain = sample_chain();
    chain[2].body["output"].as_object()["amount"] = 126;
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 3);
    CHECK(fault->reason.starts_with("hash mismatch"));
}

TEST_CASE("verify_chain names the record after a tampered record that was rehashed") {
    auto chain = sample_chain();
    chain[2].body["output"].as_object()["amount"] = 126;
    rehash(chain[2]);
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 4);
    CHECK(fault->reason.starts_with("prev_hash mismatch"));
}

TEST_CASE("verify_chain names a record that was moved out of order") {
    auto chain = sample_chain();
    std::swap(chain[1], chain[2]);
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 3);
    CHECK(fault->reason == "seq out of order: expected 2, found 3");
}

TEST_CASE("verify_chain catches reordered records even when their seqs were renumbered") {
    auto chain = sample_chain();
    std::swap(chain[1], chain[2]);
    chain[1].seq = 2;
    chain[2].seq = 3;
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 2);
    CHECK(fault->reason.starts_with("prev_hash mismatch"));
}

TEST_CASE("verify_chain names the record after a missing seq") {
    auto chain = sample_chain();
    chain.erase(chain.begin() + 2);
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 4);
    CHECK(fault->reason == "seq gap: expected 3, found 4");
}

TEST_CASE("verify_chain refuses a chain that does not start at seq 1") {
    auto chain = sample_chain();
    chain.erase(chain.begin());
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 2);
    CHECK(fault->reason.starts_with("seq gap: expected 1"));
}

TEST_CASE("verify_chain names the record whose prev_hash does not match its predecessor") {
    auto chain = sample_chain();
    chain[3].prev_hash[0] ^= 0x01;
    rehash(chain[3]);  // consistent with itself, so only the link is wrong
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 4);
    CHECK(fault->reason.starts_with("prev_hash mismatch"));
    CHECK(fault->reason.find(to_hex(chain[2].hash)) != std::string::npos);
}

TEST_CASE("verify_chain refuses a first record that does not link to the zero genesis hash") {
    auto chain = sample_chain();
    chain[0].prev_hash[31] = 0x01;
    rehash(chain[0]);
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 1);
    CHECK(fault->reason.starts_with("prev_hash mismatch"));
}

TEST_CASE("verify_chain names the record that belongs to a different run") {
    auto chain = sample_chain();
    chain[3].run_id = "run-2";
    rehash(chain[3]);
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 4);
    CHECK(fault->reason == "run_id mismatch: expected 'run-1', found 'run-2'");
}

TEST_CASE("verify_chain notices a stored hash that was altered") {
    auto chain = sample_chain();
    auto last = chain.size() - 1;
    chain[last].hash[5] ^= 0x80;
    auto fault = verify_chain(chain);
    REQUIRE(fault);
    CHECK(fault->seq == 5);
    CHECK(fault->reason.starts_with("hash mismatch"));
}

TEST_CASE("a record survives a round trip through JSON text") {
    for (auto const& r : sample_chain()) {
        INFO("seq " << r.seq);
        auto text = boost::json::serialize(to_json(r));
        auto back = record_from_json(boost::json::parse(text));
        REQUIRE(back.has_value());
        require_same(*back, r);
        CHECK(boost::json::serialize(to_json(*back)) == text);
    }
}

TEST_CASE("a record is stored as the same bytes whether written from its JSON object or directly") {
    auto chain = sample_chain();
    // A run id and a body that need escaping, non-ASCII text, numbers and nesting.
    boost::json::object body{{"text", "quote \" backslash \\ tab \t newline \n \u00e9\u4e2d"},
                             {"n", -12},
                             {"x", 0.5},
                             {"nested", {{"a", boost::json::array{1, "two", nullptr, true}}}}};
    new_record odd{record_kind::note, body};
    auto tricky = chain_next("run \"7\"\\", std::nullopt, odd);
    REQUIRE(tricky.has_value());
    chain.push_back(*tricky);
    for (auto const& r : chain) {
        INFO("seq " << r.seq << " of " << r.run_id);
        // Numbers as canonical JSON writes them (0.5, not Boost.JSON's 5E-1).
        std::string whole;
        REQUIRE(append_json(whole, to_json(r)).has_value());
        CHECK(serialize_record(r) == whole);
    }
}

TEST_CASE("record JSON writes hashes as lowercase hex and the kind by name") {
    auto r = sample_chain()[1];
    auto j = to_json(r);
    CHECK(j.at("prev_hash").as_string() == to_hex(r.prev_hash));
    CHECK(j.at("hash").as_string() == to_hex(r.hash));
    CHECK(j.at("hash").as_string().size() == 64);
    auto hash = std::string(j.at("hash").as_string());
    CHECK(std::none_of(hash.begin(), hash.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
    CHECK(j.at("kind").as_string() == "effect_started");
    CHECK(j.at("seq").to_number<std::uint64_t>() == 2);
    CHECK(j.at("run_id").as_string() == "run-1");
}

TEST_CASE("record_from_json names each missing field") {
    auto full = to_json(sample_chain()[1]);
    for (auto name : {"run_id", "seq", "kind", "body", "prev_hash", "hash"}) {
        INFO(name);
        auto j = full;
        j.erase(name);
        auto r = record_from_json(j);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "missing_field");
        CHECK(r.error().message == std::string("record.") + name + " is required");
    }
}

TEST_CASE("record_from_json names each mistyped field") {
    auto full = to_json(sample_chain()[1]);
    std::vector<std::pair<std::string, boost::json::value>> wrong{
        {"run_id", 5},      {"seq", "2"},       {"seq", 0},        {"seq", -1},    {"seq", 2.5},
        {"kind", true},     {"body", "{}"},     {"body", boost::json::array{}},    {"prev_hash", 1},
        {"hash", nullptr},
    };
    for (auto const& [name, value] : wrong) {
        INFO(name << " = " << boost::json::serialize(value));
        auto j = full;
        j[name] = value;
        auto r = record_from_json(j);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "wrong_type");
        CHECK(r.error().message.find("record." + name) != std::string::npos);
    }
}

TEST_CASE("record_from_json refuses hashes that are not 64 lowercase hex digits") {
    auto full = to_json(sample_chain()[1]);
    std::string hex(full.at("hash").as_string());
    std::string upper = hex;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](char c) { return static_cast<char>(std::toupper(c)); });
    REQUIRE(upper != hex);
    for (auto const& bad : {upper, hex.substr(2), hex + "00", "g" + hex.substr(1)}) {
        INFO(bad);
        auto j = full;
        j["hash"] = bad;
        auto r = record_from_json(j);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "invalid_field");
        CHECK(r.error().message.find("record.hash") != std::string::npos);
    }
}

TEST_CASE("record_from_json refuses an unknown kind and an unknown field") {
    auto full = to_json(sample_chain()[1]);
    auto j = full;
    j["kind"] = "effect_begun";
    auto r = record_from_json(j);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "invalid_field");
    CHECK(r.error().message.find("effect_begun") != std::string::npos);

    j = full;
    j["signature"] = "abc";
    r = record_from_json(j);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "unknown_field");
    CHECK(r.error().message.find("record.signature") != std::string::npos);

    CHECK_FALSE(record_from_json(boost::json::array{}).has_value());
}

TEST_CASE("every record kind reads back from its name, and near misses do not") {
    for (auto k : {record_kind::run_admitted, record_kind::effect_started, record_kind::effect_done,
                   record_kind::effect_failed, record_kind::policy_denied, record_kind::approval_requested,
                   record_kind::approval_decided, record_kind::note, record_kind::run_sealed}) {
        INFO(to_string(k));
        CHECK(parse_record_kind(to_string(k)) == k);
    }
    CHECK(to_string(record_kind::run_sealed) == "run_sealed");
    CHECK_FALSE(parse_record_kind("Run_Sealed"));
    CHECK_FALSE(parse_record_kind("run_sealed "));
    CHECK_FALSE(parse_record_kind(""));
}

TEST_CASE("succeeded, failed, exhausted, quarantined and cancelled are the terminal run statuses") {
    std::vector<std::string_view> terminal;
    for (auto s : run_statuses)
        if (is_terminal_status(s)) terminal.push_back(s);
    CHECK(terminal == std::vector<std::string_view>{"succeeded", "failed", "exhausted", "quarantined", "cancelled"});
    CHECK_FALSE(is_terminal_status("running"));
    CHECK_FALSE(is_terminal_status("awaiting_approval"));
    CHECK_FALSE(is_terminal_status("done"));
}

TEST_CASE("a record's hash covers an integer beyond 2^53 as RFC 8785 writes it, the nearest double") {
    auto body = obj(R"({"id":9007199254740993})");
    auto r = chain_next("run-1", std::nullopt, {record_kind::note, body});
    REQUIRE(r.has_value());
    auto expected = openssl_sha256(raw(sha256_digest{}) + R"({"body":{"id":9007199254740992},"kind":"note",)" +
                                   R"("run_id":"run-1","seq":1})");
    CHECK(to_hex(r->hash) == to_hex(expected));
    // The record's own text keeps every digit the tool sent.
    CHECK_THAT(serialize_record(*r), Catch::Contains(R"("id":9007199254740993)"));
}

TEST_CASE("a record hashed with an integer's exact digits, as releases before RFC 8785 numbers did, still verifies") {
    record r;
    r.run_id = "run-1";
    r.seq = 1;
    r.kind = record_kind::note;
    r.body = obj(R"({"id":-9223372036854775808,"n":18446744073709551615})");
    r.hash = openssl_sha256(raw(sha256_digest{}) + R"({"body":{"id":-9223372036854775808,"n":18446744073709551615},)" +
                            R"("kind":"note","run_id":"run-1","seq":1})");
    CHECK(verdict(verify_chain({r})) == "ok");
    // Either way of hashing covers the value: a changed digit is still found.
    r.body["n"] = std::uint64_t(18446744073709551614u);
    CHECK(verdict(verify_chain({r})).starts_with("seq 1: hash mismatch"));
}
