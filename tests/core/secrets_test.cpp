#include "core/secrets.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <catch2/catch.hpp>

using airlock::core::secret_set;
namespace json = boost::json;

namespace {

secret_set with(std::initializer_list<std::string_view> values) {
    secret_set s;
    for (auto v : values) s.add(v);
    return s;
}

std::string redacted(secret_set const& s, std::string text) {
    s.redact(text);
    return text;
}

}  // namespace

TEST_CASE("a secret is replaced wherever it occurs in a text, however often") {
    auto s = with({"tok-0123456789"});
    CHECK(redacted(s, "a tok-0123456789 b tok-0123456789tok-0123456789") == "a [redacted] b [redacted][redacted]");
    CHECK(redacted(s, "nothing here") == "nothing here");
}

TEST_CASE("values shorter than six bytes are not secrets: ordinary words and numbers survive") {
    secret_set s;
    CHECK_FALSE(s.add("a"));
    CHECK_FALSE(s.add("abc12"));
    CHECK(s.empty());
    CHECK(redacted(s, "a abc12 is fine") == "a abc12 is fine");
    CHECK(s.add("abc123"));
    CHECK(redacted(s, "abc123") == "[redacted]");
}

TEST_CASE("a secret that contains another is redacted whole, whichever was registered first") {
    auto s = with({"inner-secret", "outer-inner-secret-x"});
    CHECK(redacted(s, "outer-inner-secret-x and inner-secret") == "[redacted] and [redacted]");
}

TEST_CASE("a secret is found as JSON writes it inside a string, in every common encoder's style") {
    // Quote, backslash, slash, a control character, '&' and characters beyond ASCII (one beyond the
    // BMP): JSON.stringify, Python's json.dumps, PHP's json_encode and Go's encoding/json each
    // write this differently, and a tool's text is often one of them.
    std::string const secret = "p\"a\\s/s\t&w\xc3\xb6rd\xf0\x9f\x94\x91-42";
    auto s = with({secret});
    std::vector<std::string> forms{
        secret,
        R"(p\"a\\s/s\t&w)" "\xc3\xb6rd\xf0\x9f\x94\x91-42",    // JSON.stringify
        R"(p\"a\\s/s\t&w\u00f6rd\ud83d\udd11-42)",              // json.dumps (ensure_ascii)
        R"(p\"a\\s\/s\t&w\u00f6rd\ud83d\udd11-42)",             // json_encode
        R"(p\"a\\s/s\t\u0026w)" "\xc3\xb6rd\xf0\x9f\x94\x91-42",  // encoding/json
        R"(p\"a\\s/s\t&w\u00F6rd\uD83D\uDD11-42)",              // upper-case hex
        "p%22a%5Cs%2Fs%09%26w%C3%B6rd%F0%9F%94%91-42",          // percent-encoded
    };
    for (auto const& f : forms) {
        INFO(f);
        CHECK(redacted(s, "before " + f + " after") == "before [redacted] after");
    }
    // The secret inside a JSON document that is itself a string of a JSON message.
    json::value doc = json::object{{"token", secret}};
    json::value message = json::object{{"text", json::serialize(doc)}};
    CHECK(s.redact(message));
    CHECK(json::serialize(message) == R"({"text":"{\"token\":\"[redacted]\"}"})");
}

TEST_CASE("a cut text loses a trailing piece of a secret of three bytes or more, and nothing else") {
    auto s = with({"abcdefghij"});
    std::string cut = "line ends in abcdefg";
    CHECK(s.redact_cut(cut));
    CHECK(cut == "line ends in [redacted]");
    std::string piece = "ends in abc";
    s.redact_cut(piece);
    CHECK(piece == "ends in [redacted]");
    std::string tiny = "ends in ab";
    CHECK_FALSE(s.redact_cut(tiny));
    CHECK(tiny == "ends in ab");
    std::string whole = "abcdefghij then more";
    s.redact_cut(whole);
    CHECK(whole == "[redacted] then more");
}

TEST_CASE("every string, key and number of a JSON value is redacted, the structure kept") {
    auto s = with({"s3cr3t-value", "98765432"});
    auto v = json::parse(R"({
        "content": [{"type": "text", "text": "the key is s3cr3t-value."}],
        "structuredContent": {"s3cr3t-value": {"nested": ["x", "s3cr3t-value"]}, "pin": 98765432, "n": 12},
        "isError": true, "big": 1987654321
    })");
    CHECK(s.redact(v));
    auto text = json::serialize(v);
    CHECK(text.find("s3cr3t-value") == std::string::npos);
    CHECK(text.find("98765432") == std::string::npos);
    auto const& o = v.as_object();
    CHECK(o.at("content").at(0).at("text") == "the key is [redacted].");
    CHECK(o.at("structuredContent").at("[redacted]").at("nested").at(1) == "[redacted]");
    CHECK(o.at("structuredContent").at("pin") == "[redacted]");
    CHECK(o.at("structuredContent").at("n") == 12);
    CHECK(o.at("big") == "[redacted]");
    CHECK(o.at("isError") == true);
    auto clean = json::parse(R"({"a": ["b", 1, null]})");
    CHECK_FALSE(s.redact(clean));
}

TEST_CASE("the process's secrets are one set that every output reads") {
    namespace secrets = airlock::core::secrets;
    secrets::clear();
    CHECK(secrets::redacted("bearer-abcdef123") == "bearer-abcdef123");
    secrets::add("bearer-abcdef123");
    secrets::add("x");  // too short: ignored
    CHECK(secrets::redacted("Authorization: Bearer bearer-abcdef123, x") == "Authorization: Bearer [redacted], x");
    json::value v = json::object{{"e", "bearer-abcdef123"}};
    secrets::redact(v);
    CHECK(v.at("e") == "[redacted]");
    secrets::clear();
    CHECK(secrets::redacted("bearer-abcdef123") == "bearer-abcdef123");
}
