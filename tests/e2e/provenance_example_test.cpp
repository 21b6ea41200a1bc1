// examples/provenance-verifier, the upstream that checks airlock's provenance on every call, run as
// a real stdio child and called through airlock's MCP client with blocks signed by core's signer:
// what the JavaScript verifier accepts and refuses must agree with airlock's own verifier.
#include "core/provenance.hpp"
#include "mcp/client/client.hpp"
#include "mcp/client/stdio_transport.hpp"
#include "service/cli/keygen_command.hpp"

#include "tests/support/peers.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <vector>

using namespace airlock;
namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
namespace peers = airlock::testing::peers;
using namespace std::chrono_literals;

namespace {

constexpr char trusted_kid[] = "airlock-test";
constexpr char ledger_post[] = "tool://ledger/ledger_post";

std::string seed(char fill) { return std::string(32, fill); }

core::provenance_signer signer(std::string kid, char seed_fill = 'k') {
    return core::provenance_signer::from_raw_seed(std::move(kid), seed(seed_fill)).value();
}

json::object ledger_args(int amount = 1250) {
    return {{"account", "acme"}, {"amount_cents", amount}, {"memo", "March invoice"}};
}

core::provenance signed_block(core::provenance_signer const& s, json::value const& args, char const* tool = ledger_post,
                              std::chrono::sys_seconds issued = std::chrono::floor<std::chrono::seconds>(
                                  std::chrono::system_clock::now()),
                              std::string nonce = "n-1") {
    auto p = core::make_provenance("run-1", "run-1/000001/tool", "teller", std::string(64, 'a'),
                                   core::tool_id::parse(tool).value(), args, issued, 300s, std::move(nonce));
    REQUIRE(p.has_value());
    REQUIRE(s.sign(*p).has_value());
    return *p;
}

struct call {
    json::value arguments;
    std::optional<core::provenance> prov;
};

// The example as a user installs it: its two files next to a node_modules holding the SDK (here,
// the test peers'), trusting the public key of `trusted` under `kid` (derived when nullopt).
class example {
public:
    explicit example(core::provenance_signer const& trusted, std::optional<std::string> kid = trusted_kid) {
        auto const src = fs::path(AIRLOCK_SOURCE_DIR) / "examples" / "provenance-verifier";
        fs::copy_file(src / "server.mjs", dir_.path() / "server.mjs");
        fs::copy_file(src / "verify.mjs", dir_.path() / "verify.mjs");
        fs::create_directory_symlink(fs::path(peers::dir()) / "node_modules", dir_.path() / "node_modules");
        std::ofstream(dir_.path() / "airlock.pub") << trusted.public_key_pem();
        env_["AIRLOCK_PROVENANCE_PUBKEY"] = (dir_.path() / "airlock.pub").string();
        if (kid) env_["AIRLOCK_PROVENANCE_KID"] = *kid;
    }

    // Makes the calls in order, in one session with one server process.
    std::vector<core::tool_result<mcp::call_tool_result>> run(std::vector<call> calls) {
        asio::io_context ioc;
        mcp::stdio_options so;
        so.server_name = "ledger";
        so.argv = {peers::node(), (dir_.path() / "server.mjs").string()};
        so.env = env_;
        so.stdin_close_grace = 500ms;
        so.sigterm_grace = 500ms;
        mcp::client_options co;
        co.server_name = "ledger";
        co.connect_deadline = 20s;
        co.call_deadline = 20s;
        mcp::mcp_client client(std::make_unique<mcp::stdio_transport>(ioc.get_executor(), so), co);

        std::vector<core::tool_result<mcp::call_tool_result>> results;
        auto task = [&]() -> asio::awaitable<void> {
            std::exception_ptr failure;
            try {
                auto const tool = core::tool_id::parse(ledger_post).value();
                for (auto& c : calls) {
                    auto r = co_await client.async_call_tool(tool, c.arguments, c.prov);
                    results.push_back(std::move(r));
                }
            } catch (...) {
                failure = std::current_exception();
            }
            co_await client.async_close();
            if (failure) std::rethrow_exception(failure);
        };
        auto fut = asio::co_spawn(ioc, task(), asio::use_future);
        ioc.run();
        fut.get();
        return results;
    }

    mcp::call_tool_result run_one(json::value arguments, std::optional<core::provenance> prov) {
        auto results = run({{std::move(arguments), std::move(prov)}});
        REQUIRE(results.size() == 1);
        REQUIRE(results[0].has_value());
        return *results[0];
    }

private:
    testing::temp_dir dir_{"airlock-provenance-example"};
    std::map<std::string, std::string> env_;
};

std::string text_of(mcp::call_tool_result const& r) {
    REQUIRE(r.content.size() == 1);
    return std::string(r.content[0].at("text").as_string());
}

bool refused(mcp::call_tool_result const& r) { return r.is_error.value_or(false); }

}  // namespace

TEST_CASE("the provenance-verifier example runs a call signed with airlock's key") {
    auto const s = signer(trusted_kid);
    example ex(s);
    auto args = ledger_args();
    auto r = ex.run_one(args, signed_block(s, args));
    CHECK_FALSE(refused(r));
    CHECK_THAT(text_of(r), Catch::Contains("posted 1250 to acme"));
}

TEST_CASE("the provenance-verifier example refuses a call whose arguments changed after signing") {
    auto const s = signer(trusted_kid);
    example ex(s);
    auto r = ex.run_one(ledger_args(125000), signed_block(s, ledger_args(1250)));
    CHECK(refused(r));
    CHECK_THAT(text_of(r), Catch::Contains("arguments_mismatch"));
}

TEST_CASE("the provenance-verifier example refuses an unsigned call") {
    auto const s = signer(trusted_kid);
    example ex(s);
    auto r = ex.run_one(ledger_args(), std::nullopt);
    CHECK(refused(r));
    CHECK_THAT(text_of(r), Catch::Contains("unsigned"));
}

TEST_CASE("the provenance-verifier example refuses a block without an attestation") {
    auto const s = signer(trusted_kid);
    example ex(s);
    auto args = ledger_args();
    auto block = signed_block(s, args);
    block.attestation.reset();
    auto r = ex.run_one(args, block);
    CHECK(refused(r));
    CHECK_THAT(text_of(r), Catch::Contains("unsigned"));
}

TEST_CASE("the provenance-verifier example refuses another key under the trusted key id") {
    example ex(signer(trusted_kid, 'k'));
    auto const impostor = signer(trusted_kid, 'x');
    auto args = ledger_args();
    auto r = ex.run_one(args, signed_block(impostor, args));
    CHECK(refused(r));
    CHECK_THAT(text_of(r), Catch::Contains("bad_signature"));
}

TEST_CASE("the provenance-verifier example refuses an expired block") {
    auto const s = signer(trusted_kid);
    example ex(s);
    auto args = ledger_args();
    auto const long_ago = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) - 600s;
    auto r = ex.run_one(args, signed_block(s, args, ledger_post, long_ago));
    CHECK(refused(r));
    CHECK_THAT(text_of(r), Catch::Contains("expired"));
}

TEST_CASE("the provenance-verifier example refuses a block signed for another tool") {
    auto const s = signer(trusted_kid);
    example ex(s);
    auto args = ledger_args();
    auto r = ex.run_one(args, signed_block(s, args, "tool://ledger/ledger_void"));
    CHECK(refused(r));
    CHECK_THAT(text_of(r), Catch::Contains("tool_mismatch"));
}

TEST_CASE("the provenance-verifier example refuses the same signed call sent twice") {
    auto const s = signer(trusted_kid);
    example ex(s);
    auto args = ledger_args();
    auto block = signed_block(s, args);
    auto results = ex.run({{args, block}, {args, block}});
    REQUIRE(results.size() == 2);
    REQUIRE(results[0].has_value());
    REQUIRE(results[1].has_value());
    CHECK_FALSE(refused(*results[0]));
    CHECK(refused(*results[1]));
    CHECK_THAT(text_of(*results[1]), Catch::Contains("replayed"));
}

TEST_CASE("the provenance-verifier example trusts the key id airlock keygen derives when none is set") {
    auto const seeded = signer("placeholder");
    auto const derived = signer(service::derived_key_id(seeded.public_key_raw()));
    example ex(derived, std::nullopt);
    auto args = ledger_args();
    auto relabelled = signer("some-other-kid");
    auto results = ex.run({{args, signed_block(derived, args)}, {args, signed_block(relabelled, args, ledger_post,
                          std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()), "n-2")}});
    REQUIRE(results.size() == 2);
    REQUIRE(results[0].has_value());
    REQUIRE(results[1].has_value());
    CHECK_FALSE(refused(*results[0]));
    CHECK_THAT(text_of(*results[1]), Catch::Contains("unknown_key"));
}

TEST_CASE("the provenance-verifier example hashes arguments exactly as airlock's canonical JSON does") {
    auto const s = signer(trusted_kid);
    example ex(s);
    // What JSON serialisers disagree on: escapes, non-ASCII, member order beyond the BMP (UTF-16
    // order puts U+1F600 before U+FB00; code-point order would not), and number formats.
    json::object args = ledger_args();
    args["memo"] = "caf\u00e9 \"q\" \\ / \n\t\x01 \u20ac \U0001F600";
    args["extra"] = json::object{{"\uFB00", 1}, {"\U0001F600", 2}, {"a", json::array{1.5, 1e21, 1e-7, 0.1, -0.0, 100}}};
    auto r = ex.run_one(args, signed_block(s, args));
    CHECK_FALSE(refused(r));
    CHECK_THAT(text_of(r), Catch::Contains("posted 1250 to acme"));
}
