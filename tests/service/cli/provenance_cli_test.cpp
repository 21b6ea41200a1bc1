// `airlock keygen` and `airlock verify-provenance`, run as the real binary: keys come from keygen,
// blocks are signed in-process with core::provenance_signer, the way the gateway signs them.
#include "core/provenance.hpp"
#include "service/cli/keygen_command.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

using namespace airlock;
using namespace airlock::testing;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

using namespace std::chrono_literals;

// 2026-11-30T08:00:00Z: blocks are issued here and live five minutes; checks pass --at.
constexpr std::chrono::sys_seconds issued{std::chrono::sys_days{std::chrono::year{2026} / 11 / 30} + 8h};
constexpr char during[] = "2026-11-30T08:01:00Z";
constexpr char ledger_post[] = "tool://ledger/ledger_post";

std::string read_file(fs::path const& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(fs::path const& p, std::string const& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

json::object ledger_args(int amount = 1250) {
    return {{"account", "acme"}, {"amount_cents", amount}, {"memo", "caf\u00e9 \"invoice\" #7"}};
}

// A key pair made by `airlock keygen` in its own directory, and a signer holding the private half.
struct key_holder {
    temp_dir dir{"airlock-provenance-cli"};
    std::string kid;
    std::optional<core::provenance_signer> signer;

    explicit key_holder(std::vector<std::string> keygen_extra = {}) {
        std::vector<std::string> argv{AIRLOCK_BINARY, "keygen", "--out", keys().string()};
        argv.insert(argv.end(), keygen_extra.begin(), keygen_extra.end());
        auto r = run_command(argv);
        REQUIRE(r.exit_code == 0);
        kid = trimmed(r.out);
        auto s = core::provenance_signer::from_pem(kid, read_file(keys() / "provenance.key"));
        REQUIRE(s.has_value());
        signer.emplace(std::move(*s));
    }

    fs::path keys() const { return dir.path() / "keys"; }
    fs::path pub() const { return keys() / "provenance.pub"; }

    core::provenance block(json::value const& args, char const* tool = ledger_post,
                           std::chrono::sys_seconds at = issued) const {
        auto p = core::make_provenance("run-1", "run-1/000001/tool", "teller", std::string(64, 'a'),
                                       core::tool_id::parse(tool).value(), args, at, 300s, "nonce-1");
        REQUIRE(p.has_value());
        REQUIRE(signer->sign(*p).has_value());
        return *p;
    }

    // tools/call params as airlock sends them upstream: the upstream's name, arguments, the block.
    json::object params(json::object args, core::provenance const& p, std::string name = "ledger_post") const {
        json::object o{{"name", name}, {"arguments", std::move(args)}};
        core::attach_provenance(o, p);
        return o;
    }

    fs::path save(std::string const& name, json::value const& v) const {
        auto path = dir.path() / name;
        write_file(path, json::serialize(v));
        return path;
    }

    command_result verify(fs::path const& input, std::vector<std::string> extra = {"--at", during}) const {
        std::vector<std::string> argv{AIRLOCK_BINARY, "verify-provenance", "--key", pub().string()};
        argv.insert(argv.end(), extra.begin(), extra.end());
        argv.push_back(input.string());
        return run_command(argv);
    }
};

}  // namespace

TEST_CASE("airlock keygen writes a PKCS#8 private key and a public key and prints the derived key id") {
    key_holder k;
    CHECK(std::regex_match(k.kid, std::regex("ed25519-[0-9a-f]{16}")));
    CHECK(k.kid == service::derived_key_id(k.signer->public_key_raw()));
    CHECK(read_file(k.keys() / "provenance.key").starts_with("-----BEGIN PRIVATE KEY-----\n"));
    CHECK(read_file(k.pub()) == k.signer->public_key_pem());
    CHECK(trimmed(read_file(k.keys() / "provenance.kid")) == k.kid);
}

TEST_CASE("airlock keygen makes the private key readable and writable by its owner only") {
    key_holder k;
    struct stat st {};
    REQUIRE(::stat((k.keys() / "provenance.key").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
}

TEST_CASE("airlock keygen refuses to overwrite an existing key") {
    key_holder k;
    auto const before = read_file(k.keys() / "provenance.key");
    auto r = run_command({AIRLOCK_BINARY, "keygen", "--out", k.keys().string()});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("refusing to overwrite"));
    CHECK(read_file(k.keys() / "provenance.key") == before);
}

TEST_CASE("airlock keygen --kid prints and records the key id it is given") {
    key_holder k({"--kid", "ledger-2026"});
    CHECK(k.kid == "ledger-2026");
    CHECK(trimmed(read_file(k.keys() / "provenance.kid")) == "ledger-2026");
}

TEST_CASE("airlock verify-provenance prints ok for a call signed with the key") {
    key_holder k;
    auto args = ledger_args();
    auto r = k.verify(k.save("call.json", k.params(args, k.block(args))));
    CHECK(r.out == "ok\n");
    CHECK(r.exit_code == 0);
}

TEST_CASE("airlock verify-provenance checks validity against the current time without --at") {
    key_holder k;
    auto args = ledger_args();
    auto const now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    auto fresh = k.save("fresh.json", k.params(args, k.block(args, ledger_post, now)));
    auto stale = k.save("stale.json", k.params(args, k.block(args)));
    CHECK(k.verify(fresh, {}).out == "ok\n");
    CHECK(k.verify(stale, {}).out == (now < issued ? "not_yet_valid\n" : "expired\n"));
}

TEST_CASE("airlock verify-provenance reports arguments_mismatch for an argument changed after signing") {
    key_holder k;
    auto args = ledger_args(1250);
    auto p = k.block(args);
    auto r = k.verify(k.save("tampered.json", k.params(ledger_args(125000), p)));
    CHECK(r.out == "arguments_mismatch\n");
    CHECK(r.exit_code == 1);
}

TEST_CASE("airlock verify-provenance reports unknown_key for a block signed by another key") {
    key_holder k, other;
    auto args = ledger_args();
    auto r = k.verify(k.save("other.json", k.params(args, other.block(args))));
    CHECK(r.out == "unknown_key\n");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(other.kid));
}

TEST_CASE("airlock verify-provenance reports bad_signature for another key under the trusted key id") {
    key_holder k, impostor;
    auto args = ledger_args();
    auto block = impostor.block(args);
    block.attestation.reset();
    auto forged = core::provenance_signer::from_pem(k.kid, read_file(impostor.keys() / "provenance.key"));
    REQUIRE(forged.has_value());
    REQUIRE(forged->sign(block).has_value());
    auto r = k.verify(k.save("forged.json", k.params(args, block)));
    CHECK(r.out == "bad_signature\n");
    CHECK(r.exit_code == 1);
}

TEST_CASE("airlock verify-provenance reports expired at or after the block's expiry") {
    key_holder k;
    auto args = ledger_args();
    auto call = k.save("call.json", k.params(args, k.block(args)));
    auto r = k.verify(call, {"--at", "2026-11-30T08:05:00Z"});
    CHECK(r.out == "expired\n");
    CHECK(r.exit_code == 1);
    CHECK(k.verify(call, {"--at", "2026-11-30T09:04:59+01:00"}).out == "ok\n");
}

TEST_CASE("airlock verify-provenance reports not_yet_valid before the block was issued") {
    key_holder k;
    auto args = ledger_args();
    auto r = k.verify(k.save("call.json", k.params(args, k.block(args))), {"--at", "2026-11-30T07:59:59.9Z"});
    CHECK(r.out == "not_yet_valid\n");
    CHECK(r.exit_code == 1);
}

TEST_CASE("airlock verify-provenance reports unsigned for a call without a block") {
    key_holder k;
    json::object params{{"name", "ledger_post"}, {"arguments", ledger_args()}};
    auto r = k.verify(k.save("plain.json", params));
    CHECK(r.out == "unsigned\n");
    CHECK(r.exit_code == 1);
}

TEST_CASE("airlock verify-provenance reports tool_mismatch when the call names another tool") {
    key_holder k;
    auto args = ledger_args();
    auto r = k.verify(k.save("renamed.json", k.params(args, k.block(args), "ledger_void")));
    CHECK(r.out == "tool_mismatch\n");
    CHECK(r.exit_code == 1);
}

TEST_CASE("airlock verify-provenance reads a whole JSON-RPC tools/call request from stdin") {
    key_holder k;
    auto args = ledger_args();
    json::object request{{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tools/call"}, {"params", k.params(args, k.block(args))}};
    auto file = k.save("request.json", request);
    auto r = run_command({"/bin/sh", "-c", "exec \"$0\" verify-provenance --key \"$1\" --at \"$2\" - < \"$3\"",
                          AIRLOCK_BINARY, k.pub().string(), during, file.string()});
    CHECK(r.out == "ok\n");
    CHECK(r.exit_code == 0);
}

TEST_CASE("airlock verify-provenance checks a journal record against the tool and arguments it records") {
    key_holder k;
    auto args = ledger_args();
    auto p = k.block(args);
    json::object body{{"effect_key", p.effect_key}, {"target", "tool"}, {"tool", ledger_post},
                      {"arguments", args},         {"mutates", true},   {"provenance", core::to_json(p)}};
    json::object record{{"run_id", "run-1"}, {"seq", 2}, {"kind", "effect_started"}, {"body", body}};
    CHECK(k.verify(k.save("record.json", record)).out == "ok\n");

    record["body"].as_object()["tool"] = "tool://ledger/ledger_void";
    CHECK(k.verify(k.save("moved.json", record)).out == "tool_mismatch\n");
}

TEST_CASE("airlock verify-provenance checks a bare block against --arguments") {
    key_holder k;
    auto args = ledger_args();
    auto block = k.save("block.json", core::to_json(k.block(args)));
    CHECK(k.verify(block, {"--at", during, "--arguments", json::serialize(args)}).out == "ok\n");
    CHECK(k.verify(block, {"--at", during, "--arguments", "{}"}).out == "arguments_mismatch\n");
    auto without = k.verify(block);
    CHECK(without.exit_code == 2);
    CHECK_THAT(without.err, Catch::Contains("--arguments"));
}

TEST_CASE("airlock verify-provenance exits 2 naming the field for a malformed block") {
    key_holder k;
    auto args = ledger_args();
    auto params = k.params(args, k.block(args));
    params["_meta"].as_object()[core::provenance_meta_key].as_object()["issued_at"] = "yesterday";
    auto r = k.verify(k.save("malformed.json", params));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("issued_at"));
}
