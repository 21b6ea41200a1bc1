// What a JWT access token costs the door per request, beside what a static bearer token costs:
// validate_access_token (parse, key choice, signature, claims) for RS256, PS256, ES256 and EdDSA
// tokens shaped like an authorization server's, and service::check_credentials with a configured
// token, in the same run on the same machine. One thread, no I/O: the figures are CPU per request.
// Prints a table and one JSON line; it never passes or fails on time.
//
//   build/bench/bench_jwt_bench [--iterations N]
//
// N defaults to 20,000 per row (bounded to 1..1,000,000), after 500 warm-up calls.

#include "service/http/access_token.hpp"
#include "service/http/door.hpp"
#include "tests/support/jwt_signer.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

using namespace airlock;
using namespace airlock::service;
using clock_type = std::chrono::steady_clock;
namespace json = boost::json;

namespace {

constexpr char const* issuer = "https://as.bench.example";
constexpr char const* audience = "https://airlock.bench.example/mcp";

struct row {
    std::string name;
    std::size_t iterations = 0;
    std::size_t failures = 0;
    double p50_us = 0;
    double p99_us = 0;
};

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// `once` returns whether the request was admitted; every call is timed on its own.
row measure(std::string name, int iterations, std::function<bool()> const& once) {
    row r;
    r.name = std::move(name);
    for (int i = 0; i < 500; ++i) once();
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(iterations));
    for (int i = 0; i < iterations; ++i) {
        auto t0 = clock_type::now();
        bool ok = once();
        auto t1 = clock_type::now();
        if (!ok) ++r.failures;
        samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    r.iterations = samples.size();
    r.p50_us = percentile(samples, 0.50);
    r.p99_us = percentile(samples, 0.99);
    return r;
}

// The claims an authorization server such as oidc-provider puts in an access token.
json::object claims(std::int64_t now) {
    return {{"iss", issuer},
            {"sub", "user-8f3a2c"},
            {"aud", audience},
            {"exp", now + 3600},
            {"iat", now},
            {"nbf", now},
            {"jti", "Xq3v9k2LmN8pR4sT6uW1yZ"},
            {"client_id", "bench-agent"},
            {"scope", "openid tools:read tools:call"}};
}

}  // namespace

int main(int argc, char** argv) {
    int iterations = 20000;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--iterations" && i + 1 < argc) iterations = std::clamp(std::atoi(argv[++i]), 1, 1000000);
        else {
            std::cerr << "usage: jwt_bench [--iterations N]\n";
            return 2;
        }
    }

    auto rsa = testing::signing_key::rsa(2048);
    auto p256 = testing::signing_key::ec("P-256");
    auto ed = testing::signing_key::ed25519();
    // A JWKS as issuers publish one during a rotation: the current keys and a retiring RSA key.
    auto retiring = testing::signing_key::rsa(2048);
    auto parsed = jose::parse_jwks(testing::jwks_json({retiring.public_jwk("rsa-old", "RS256"), rsa.public_jwk("rsa-1"),
                                                       p256.public_jwk("ec-1", "ES256"), ed.public_jwk("ed-1", "EdDSA")}));
    if (!parsed || !parsed->skipped.empty()) {
        std::cerr << "jwt_bench: the JWKS did not parse\n";
        return 1;
    }
    auto set = std::make_shared<jose::key_set const>(std::move(*parsed));
    key_source keys = [set](std::string_view iss) -> std::shared_ptr<jose::key_set const> {
        return iss == issuer ? set : nullptr;
    };
    token_rules rules;
    rules.issuers = {issuer};
    rules.audiences = {audience};

    auto now = std::chrono::system_clock::now();
    auto now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    auto token = [&](testing::signing_key const& k, char const* alg, char const* kid) {
        return testing::sign_token(k, {{"alg", alg}, {"typ", "at+jwt"}, {"kid", kid}}, claims(now_s));
    };

    std::vector<row> rows;
    for (auto [name, key, alg, kid] : {std::tuple{"jwt RS256", &rsa, "RS256", "rsa-1"},
                                       std::tuple{"jwt PS256", &rsa, "PS256", "rsa-1"},
                                       std::tuple{"jwt ES256", &p256, "ES256", "ec-1"},
                                       std::tuple{"jwt EdDSA", &ed, "EdDSA", "ed-1"}}) {
        auto t = token(*key, alg, kid);
        rows.push_back(measure(name, iterations, [&] {
            return std::holds_alternative<access_claims>(validate_access_token(t, rules, keys, now));
        }));
    }

    // The door as airlock runs it with configured tokens: a lookup in a table of principals.
    std::unordered_map<std::string, std::string> principals;
    for (int i = 0; i < 16; ++i) principals.emplace("static-bench-token-" + std::to_string(i) + "-0123456789abcdef", "p" + std::to_string(i));
    auto lookup = [&principals](std::string_view t) -> std::optional<std::string> {
        auto it = principals.find(std::string(t));
        if (it == principals.end()) return std::nullopt;
        return it->second;
    };
    auto policy = make_door_policy({}, {}, lookup, false, false);
    std::string header = "Bearer static-bench-token-7-0123456789abcdef";
    door_request req;
    req.authorization = header;
    req.client = "127.0.0.1";
    rows.push_back(measure("static bearer", iterations, [&] {
        return std::holds_alternative<door_admitted>(check_credentials(policy, req));
    }));

    std::printf("%-16s %10s %9s %10s %10s %12s\n", "check", "requests", "failures", "p50 us", "p99 us", "p50 req/s");
    json::array cells;
    for (auto const& r : rows) {
        double rate = r.p50_us > 0 ? 1e6 / r.p50_us : 0;
        std::printf("%-16s %10zu %9zu %10.2f %10.2f %12.0f\n", r.name.c_str(), r.iterations, r.failures, r.p50_us,
                    r.p99_us, rate);
        cells.push_back({{"check", r.name}, {"requests", r.iterations}, {"failures", r.failures}, {"p50_us", r.p50_us},
                         {"p99_us", r.p99_us}});
    }
    std::cout << json::serialize(json::object{{"bench", "jwt"}, {"cells", cells}}) << "\n";
    bool failed = std::any_of(rows.begin(), rows.end(), [](row const& r) { return r.failures > 0; });
    return failed ? 1 : 0;
}
