#include "core/label.hpp"

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

using namespace airlock::core;

namespace {

label make_label(std::set<std::string> sources, trust t, sensitivity s) {
    label l;
    l.sources = std::move(sources);
    l.trust = t;
    l.sensitivity = s;
    return l;
}

tainted make_tainted(label whole, std::vector<std::pair<std::string, label>> fields) {
    tainted v;
    v.value = boost::json::parse(R"({"account":"AC-1","amount":5,"ab":1,"abc":{"d":2}})");
    v.whole = std::move(whole);
    v.fields = std::move(fields);
    return v;
}

}  // namespace

TEST_CASE("trust and sensitivity levels are ordered from best to worst") {
    CHECK(trust::trusted < trust::untrusted);
    CHECK(sensitivity::public_ < sensitivity::internal);
    CHECK(sensitivity::internal < sensitivity::confidential);
    CHECK(sensitivity::confidential < sensitivity::secret);
}

TEST_CASE("sensitivity names round-trip through their manifest spelling") {
    for (auto s : {sensitivity::public_, sensitivity::internal, sensitivity::confidential, sensitivity::secret}) {
        auto parsed = parse_sensitivity(to_string(s));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == s);
    }
    CHECK(to_string(sensitivity::public_) == "public");
    CHECK(to_string(sensitivity::secret) == "secret");
}

TEST_CASE("a sensitivity name is matched byte for byte, not guessed") {
    CHECK_FALSE(parse_sensitivity("Internal").has_value());
    CHECK_FALSE(parse_sensitivity(" internal").has_value());
    CHECK_FALSE(parse_sensitivity("public_").has_value());
    CHECK_FALSE(parse_sensitivity("").has_value());
    CHECK_FALSE(parse_sensitivity("top-secret").has_value());
}

TEST_CASE("trust names round-trip and unknown ones are refused") {
    REQUIRE(parse_trust("trusted") == trust::trusted);
    REQUIRE(parse_trust("untrusted") == trust::untrusted);
    CHECK(to_string(trust::trusted) == "trusted");
    CHECK(to_string(trust::untrusted) == "untrusted");
    CHECK_FALSE(parse_trust("Trusted").has_value());
    CHECK_FALSE(parse_trust("semi").has_value());
}

TEST_CASE("a default label is trusted, public and from no source") {
    label l;
    CHECK(l.trust == trust::trusted);
    CHECK(l.sensitivity == sensitivity::public_);
    CHECK(l.sources.empty());
}

TEST_CASE("joining labels keeps every source, the worse trust and the higher sensitivity") {
    auto a = make_label({"user"}, trust::trusted, sensitivity::confidential);
    auto b = make_label({"tool://ledger/read", "user"}, trust::untrusted, sensitivity::internal);
    auto j = a.join(b);
    CHECK(j.sources == std::set<std::string>{"tool://ledger/read", "user"});
    CHECK(j.trust == trust::untrusted);
    CHECK(j.sensitivity == sensitivity::confidential);
}

TEST_CASE("joining labels gives the same result in either order") {
    auto a = make_label({"a"}, trust::untrusted, sensitivity::public_);
    auto b = make_label({"b"}, trust::trusted, sensitivity::secret);
    CHECK(a.join(b) == b.join(a));
    CHECK(a.join(a) == a);
}

TEST_CASE("a value without field labels has its whole label everywhere") {
    auto whole = make_label({"model"}, trust::untrusted, sensitivity::internal);
    auto v = make_tainted(whole, {});
    CHECK(v.label_at("") == whole);
    CHECK(v.label_at("/account") == whole);
    CHECK(v.label_at("/abc/d") == whole);
}

TEST_CASE("a field label applies to the field itself and everything beneath it") {
    auto whole = make_label({"model"}, trust::untrusted, sensitivity::public_);
    auto operator_label = make_label({"operator"}, trust::trusted, sensitivity::public_);
    auto v = make_tainted(whole, {{"/abc", operator_label}});
    CHECK(v.label_at("/abc") == operator_label);
    CHECK(v.label_at("/abc/d") == operator_label);
    CHECK(v.label_at("/abc/d/e/f") == operator_label);
}

TEST_CASE("a trusted account beside an untrusted amount keeps its own label") {
    auto whole = make_label({"model"}, trust::untrusted, sensitivity::public_);
    auto operator_label = make_label({"operator"}, trust::trusted, sensitivity::public_);
    auto v = make_tainted(whole, {{"/account", operator_label}});
    CHECK(v.label_at("/account").trust == trust::trusted);
    CHECK(v.label_at("/amount").trust == trust::untrusted);
}

TEST_CASE("a pointer that only shares a prefix of characters is not an ancestor") {
    auto whole = make_label({}, trust::trusted, sensitivity::public_);
    auto ab = make_label({"x"}, trust::untrusted, sensitivity::secret);
    auto v = make_tainted(whole, {{"/ab", ab}});
    CHECK(v.label_at("/ab") == ab);
    CHECK(v.label_at("/ab/0") == ab);
    CHECK(v.label_at("/abc") == whole);
    CHECK(v.label_at("/abc/d") == whole);
    CHECK(v.label_at("/a") == whole);
}

TEST_CASE("the nearest labelled ancestor wins over a farther one") {
    auto whole = make_label({"w"}, trust::untrusted, sensitivity::public_);
    auto outer = make_label({"outer"}, trust::untrusted, sensitivity::secret);
    auto inner = make_label({"inner"}, trust::trusted, sensitivity::public_);
    // Both list orders, so that list order cannot be what picks the answer.
    for (auto const& v : {make_tainted(whole, {{"/abc/d", inner}, {"/abc", outer}}),
                          make_tainted(whole, {{"/abc", outer}, {"/abc/d", inner}})}) {
        CHECK(v.label_at("/abc/d") == inner);
        CHECK(v.label_at("/abc/d/x") == inner);
        CHECK(v.label_at("/abc/e") == outer);
        CHECK(v.label_at("/abc") == outer);
    }
}

TEST_CASE("a label on the root pointer overrides the whole label for every field") {
    auto whole = make_label({"w"}, trust::untrusted, sensitivity::secret);
    auto root = make_label({"root"}, trust::trusted, sensitivity::public_);
    auto v = make_tainted(whole, {{"", root}});
    CHECK(v.label_at("") == root);
    CHECK(v.label_at("/amount") == root);
    CHECK(v.overall() == root);
}

TEST_CASE("two labels on the same pointer are joined, never one dropped") {
    auto whole = make_label({}, trust::trusted, sensitivity::public_);
    auto first = make_label({"a"}, trust::trusted, sensitivity::secret);
    auto second = make_label({"b"}, trust::untrusted, sensitivity::public_);
    auto v = make_tainted(whole, {{"/account", first}, {"/account", second}});
    auto l = v.label_at("/account");
    CHECK(l.trust == trust::untrusted);
    CHECK(l.sensitivity == sensitivity::secret);
    CHECK(l.sources == std::set<std::string>{"a", "b"});
}

TEST_CASE("the overall label joins the whole label with every field label") {
    auto whole = make_label({"w"}, trust::trusted, sensitivity::public_);
    auto amount = make_label({"model"}, trust::untrusted, sensitivity::public_);
    auto account = make_label({"crm"}, trust::trusted, sensitivity::confidential);
    auto v = make_tainted(whole, {{"/amount", amount}, {"/account", account}});
    auto o = v.overall();
    CHECK(o.trust == trust::untrusted);
    CHECK(o.sensitivity == sensitivity::confidential);
    CHECK(o.sources == std::set<std::string>{"crm", "model", "w"});
}

TEST_CASE("the overall label of a value without field labels is its whole label") {
    auto whole = make_label({"w"}, trust::untrusted, sensitivity::internal);
    CHECK(make_tainted(whole, {}).overall() == whole);
}

TEST_CASE("the empty string and slash-separated tokens are JSON pointers") {
    CHECK(is_json_pointer(""));
    CHECK(is_json_pointer("/"));
    CHECK(is_json_pointer("/account"));
    CHECK(is_json_pointer("/a/b/0"));
    CHECK(is_json_pointer("//"));
    CHECK(is_json_pointer("/a b/c%d"));
    CHECK(is_json_pointer("/m~0n"));
    CHECK(is_json_pointer("/a~1b"));
    CHECK(is_json_pointer("/~01"));
    CHECK(is_json_pointer("/caf\xC3\xA9"));
}

TEST_CASE("a pointer must start with a slash") {
    CHECK_FALSE(is_json_pointer("account"));
    CHECK_FALSE(is_json_pointer("#/account"));
    CHECK_FALSE(is_json_pointer("0/account"));
    CHECK_FALSE(is_json_pointer(" /account"));
}

TEST_CASE("a tilde in a pointer must be followed by 0 or 1") {
    CHECK_FALSE(is_json_pointer("/a~"));
    CHECK_FALSE(is_json_pointer("/a~2"));
    CHECK_FALSE(is_json_pointer("/a~/b"));
    CHECK_FALSE(is_json_pointer("/~x"));
}

TEST_CASE("a pointer that is not well-formed UTF-8 is refused") {
    CHECK_FALSE(is_json_pointer("/a\xFF"));
    CHECK_FALSE(is_json_pointer("/\xC3"));              // truncated sequence
    CHECK_FALSE(is_json_pointer("/\xC0\xAF"));          // overlong '/'
    CHECK_FALSE(is_json_pointer("/\xED\xA0\x80"));      // UTF-16 surrogate
    CHECK_FALSE(is_json_pointer("/\xF4\x90\x80\x80"));  // past U+10FFFF
}
