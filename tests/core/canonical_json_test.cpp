#include "core/canonical_json.hpp"
#include "tests/support/random_numbers.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

using airlock::core::append_json;
using airlock::core::canonical;
using airlock::core::canonical_exact_integers;
using airlock::core::canonicalize;
using airlock::core::format_es_number;
using airlock::core::parse_ijson;

namespace {
double from_bits(std::uint64_t bits) { return std::bit_cast<double>(bits); }
}  // namespace

TEST_CASE("the RFC 8785 section 3.2.2 example canonicalizes to the RFC's output") {
    auto input = R"({
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
})";
    auto expected = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
                    "\"string\":\"\xE2\x82\xAC$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
    auto out = canonicalize(input);
    REQUIRE(out.has_value());
    CHECK(*out == expected);
}

TEST_CASE("RFC 8785 section 3.2.3: members are sorted by UTF-16 code units, not UTF-8 bytes") {
    auto input = R"({
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
})";
    auto out = canonicalize(input);
    REQUIRE(out.has_value());
    // U+1F600 (a surrogate pair, 0xD83D...) sorts before U+FB33 in UTF-16, after it in UTF-8.
    std::string expected =
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xC2\x80\":\"Control\","
        "\"\xC3\xB6\":\"Latin Small Letter O With Diaeresis\",\"\xE2\x82\xAC\":\"Euro Sign\","
        "\"\xF0\x9F\x98\x80\":\"Emoji: Grinning Face\",\"\xEF\xAC\xB3\":\"Hebrew Letter Dalet With Dagesh\"}";
    CHECK(*out == expected);
}

TEST_CASE("numbers follow the RFC 8785 appendix B formatting table") {
    struct row {
        std::uint64_t bits;
        char const* text;
    };
    row const table[] = {
        {0x0000000000000000, "0"},
        {0x8000000000000000, "0"},
        {0x0000000000000001, "5e-324"},
        {0x8000000000000001, "-5e-324"},
        {0x7fefffffffffffff, "1.7976931348623157e+308"},
        {0xffefffffffffffff, "-1.7976931348623157e+308"},
        {0x4340000000000000, "9007199254740992"},
        {0xc340000000000000, "-9007199254740992"},
        {0x4430000000000000, "295147905179352830000"},
        {0x44b52d02c7e14af5, "9.999999999999997e+22"},
        {0x44b52d02c7e14af6, "1e+23"},
        {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
        {0x444b1ae4d6e2ef4e, "999999999999999700000"},
        {0x444b1ae4d6e2ef4f, "999999999999999900000"},
        {0x444b1ae4d6e2ef50, "1e+21"},
        {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
        {0x3eb0c6f7a0b5ed8d, "0.000001"},
        {0x41b3de4355555553, "333333333.3333332"},
        {0x41b3de4355555554, "333333333.33333325"},
        {0x41b3de4355555555, "333333333.3333333"},
        {0x41b3de4355555556, "333333333.3333334"},
        {0x41b3de4355555557, "333333333.33333343"},
        {0xbecbf647612f3696, "-0.0000033333333333333333"},
        {0x43143ff3c1cb0959, "1424953923781206.2"},
    };
    for (auto const& r : table) {
        INFO("bits 0x" << std::hex << r.bits);
        CHECK(format_es_number(from_bits(r.bits)) == r.text);
        CHECK(*canonical(boost::json::value(from_bits(r.bits))) == r.text);
    }
}

TEST_CASE("NaN and Infinity are refused, as the RFC's table requires") {
    CHECK_FALSE(canonical(boost::json::value(from_bits(0x7fffffffffffffff))).has_value());
    CHECK_FALSE(canonical(boost::json::value(from_bits(0x7ff0000000000000))).has_value());
    CHECK_FALSE(canonicalize("1e400").has_value());
}

// Found by tests/tools/canon_check.mjs against canonicalize 5.1.0: airlock wrote these integers
// with all their digits, where RFC 8785 (numbers are I-JSON doubles) writes the nearest double.
TEST_CASE("integers beyond 2^53 are written as the nearest double, as RFC 8785 and canonicalize 5.1.0 write them") {
    CHECK(*canonicalize("[9007199254740993, -9007199254740993, 18446744073709551615, -3924923072849258444]") ==
          "[9007199254740992,-9007199254740992,18446744073709552000,-3924923072849258500]");
    CHECK(*canonicalize(R"({"a":642866947914085686,"b":9223372036854775807,"c":-9223372036854775808})") ==
          R"({"a":642866947914085600,"b":9223372036854776000,"c":-9223372036854776000})");
    CHECK(*canonicalize("[9007199254740992, -9007199254740992, 9007199254740991, -0, 10]") ==
          "[9007199254740992,-9007199254740992,9007199254740991,0,10]");
    CHECK(*canonicalize("[1.0, 1e2, 1.5e1]") == "[1,100,15]");
}

TEST_CASE("JSON text written as held keeps every digit of an integer beyond 2^53") {
    std::string out;
    REQUIRE(append_json(out, *parse_ijson("[9007199254740993,18446744073709551615]")));
    CHECK(out == "[9007199254740993,18446744073709551615]");
    auto o = parse_ijson(R"({"n":-9223372036854775808})")->as_object();
    CHECK(*canonical_exact_integers(o) == R"({"n":-9223372036854775808})");
    CHECK(*canonical(o) == R"({"n":-9223372036854776000})");
}

TEST_CASE("duplicate member names are refused with the name in the message") {
    auto out = canonicalize(R"({"a": 1, "b": {"x": 1, "x": 2}})");
    REQUIRE_FALSE(out.has_value());
    CHECK(out.error().code == "duplicate_key");
    CHECK_THAT(out.error().message, Catch::Contains("\"x\""));
}

TEST_CASE("names that differ only before unescaping are still duplicates") {
    auto out = canonicalize(R"({"a": 1, "\u0061": 2})");
    REQUIRE_FALSE(out.has_value());
    CHECK(out.error().code == "duplicate_key");
}

TEST_CASE("lone surrogates are refused") {
    for (auto text : {R"("\ud800")", R"("\udc00")", R"("\ud83dx")", R"("\ud83d\u0041")"}) {
        INFO(text);
        auto out = canonicalize(text);
        REQUIRE_FALSE(out.has_value());
        CHECK(out.error().code == "lone_surrogate");
    }
}

TEST_CASE("invalid UTF-8 is refused whether parsed or built in memory") {
    CHECK(canonicalize("\"\xC0\xAF\"").error().code == "invalid_utf8");      // overlong '/'
    CHECK(canonicalize("\"\xED\xA0\x80\"").error().code == "invalid_utf8");  // encoded surrogate
    CHECK(canonicalize("\"\xFF\"").error().code == "invalid_utf8");
    CHECK_FALSE(canonical(boost::json::value("\xC3")).has_value());
}

TEST_CASE("control characters use short escapes where JSON has them and lowercase \\u00xx elsewhere") {
    boost::json::value v = boost::json::string("\x01\x1f\b\t\n\f\r\x7f\xE2\x80\xA8/");
    CHECK(*canonical(v) == "\"\\u0001\\u001f\\b\\t\\n\\f\\r\x7f\xE2\x80\xA8/\"");
}

TEST_CASE("malformed JSON gets an error with its byte position") {
    for (auto text : {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "tru", "[1] x", "\"a\x01\""}) {
        INFO(text);
        auto out = parse_ijson(text);
        REQUIRE_FALSE(out.has_value());
        CHECK_THAT(out.error().message, Catch::Contains("byte"));
    }
}

TEST_CASE("nesting beyond the depth limit is refused rather than overflowing the stack") {
    std::string deep(100000, '[');
    auto out = parse_ijson(deep);
    REQUIRE_FALSE(out.has_value());
    CHECK(out.error().code == "too_deep");
    CHECK(parse_ijson("[[[1]]]", 3).has_value());
    CHECK_FALSE(parse_ijson("[[[[1]]]]", 3).has_value());
}

TEST_CASE("canonical output is stable under whitespace and member order") {
    auto a = canonicalize(R"({ "b" : [1, 2, {"z": null, "a": true}], "a": "x" })");
    auto b = canonicalize(R"({"a":"x","b":[1,2,{"a":true,"z":null}]})");
    REQUIRE(a.has_value());
    CHECK(*a == *b);
    CHECK(*a == R"({"a":"x","b":[1,2,{"a":true,"z":null}]})");
}

TEST_CASE("an object has the same canonical form as a value holding it") {
    auto v = boost::json::parse(R"({"b":[1,2.5,{"z":null,"a":"\u00e9"}],"a":"x","\ue000":1,"\u00ff":2})");
    auto as_object = canonical(v.as_object());
    auto as_value = canonical(v);
    REQUIRE(as_object.has_value());
    REQUIRE(as_value.has_value());
    CHECK(*as_object == *as_value);
    boost::json::object bad{{"nan", std::numeric_limits<double>::quiet_NaN()}};
    auto refused = canonical(bad);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == "not_ijson");
}

TEST_CASE("the size bound of a value's canonical form is never below the size of that form") {
    auto v = airlock::core::parse_ijson(R"({"b":[1,-2.5e300,true,null,"\u0001\n\"\\é"],"a":{"\u0000":18446744073709551615}})");
    REQUIRE(v.has_value());
    auto text = airlock::core::canonical(*v);
    REQUIRE(text.has_value());
    CHECK(airlock::core::canonical_size_bound(*v) >= text->size());
    boost::json::value controls(boost::json::string(1000, '\x01'));  // each written as six bytes
    auto ctext = airlock::core::canonical(controls);
    REQUIRE(ctext.has_value());
    CHECK(ctext->size() == 6002);
    CHECK(airlock::core::canonical_size_bound(controls) >= ctext->size());
}

TEST_CASE("every double written canonically reads back to the same bits, and writing again gives the same text") {
    auto numbers = airlock::testing::number_edges();
    auto random = airlock::testing::random_doubles(100000, 42);
    numbers.insert(numbers.end(), random.begin(), random.end());
    std::size_t differing = 0;
    for (double d : numbers) {
        auto text = format_es_number(d);
        auto back = parse_ijson(text);
        REQUIRE(back.has_value());
        if (!airlock::testing::same_number(*back, d) || canonical(*back).value() != text) {
            if (++differing <= 5) UNSCOPED_INFO(text << " read back as " << boost::json::serialize(*back));
        }
    }
    CHECK(differing == 0);
}

TEST_CASE("a depth limit names itself, and values are measured to it without walking past it") {
    auto refused = parse_ijson(std::string(200, '[') + std::string(200, ']'));
    REQUIRE_FALSE(refused.has_value());
    CHECK_THAT(refused.error().message,
               Catch::Contains("nesting deeper than " + std::to_string(airlock::core::max_json_depth) + " levels"));
    auto v = airlock::testing::nested_objects(50);
    CHECK_FALSE(airlock::core::nests_deeper_than(v, 50));
    CHECK(airlock::core::nests_deeper_than(v, 49));
    CHECK_FALSE(airlock::core::nests_deeper_than(boost::json::value(1), 0));
    CHECK(airlock::core::nests_deeper_than(boost::json::value(boost::json::array{}), 0));
}

// Found by the jsonrpc_decode fuzz target: the error named an unexpected byte as it was, so a
// byte of a UTF-8 sequence made the message, and the JSON-RPC error that carries it, invalid UTF-8.
TEST_CASE("a parse error names an unexpected non-ASCII byte in hex, so its message stays valid UTF-8") {
    auto r = parse_ijson("{\"id\":\xde\x96\x89}");
    REQUIRE_FALSE(r.has_value());
    CHECK(airlock::core::is_valid_utf8(r.error().message));
    CHECK(r.error().message == "unexpected character byte 0xde at byte 6");
    CHECK(parse_ijson("{\"id\":x}").error().message == "unexpected character 'x' at byte 6");
}

TEST_CASE("an invalid escape is named without repeating a non-ASCII byte raw") {
    auto r = parse_ijson("\"\\\xff\"");
    REQUIRE_FALSE(r.has_value());
    CHECK(airlock::core::is_valid_utf8(r.error().message));
    CHECK(r.error().message == "invalid escape: backslash then byte 0xff at byte 3");
}
