#include "core/toolbox.hpp"

// Only the test drives the coroutines; core itself includes no Asio I/O header.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <catch2/catch.hpp>

#include <exception>

namespace json = boost::json;
using namespace airlock::core;

namespace {
namespace shop {

enum class currency { eur, usd, chf };
BOOST_DESCRIBE_ENUM(currency, eur, usd, chf)

struct party {
    std::string name;
    std::optional<std::string> iban;
    static constexpr field_doc field_docs[] = {{"name", "Who receives the money."}};
};
BOOST_DESCRIBE_STRUCT(party, (), (name, iban))

struct line {
    std::string sku;
    std::uint32_t quantity = 0;
};
BOOST_DESCRIBE_STRUCT(line, (), (sku, quantity))

struct order_args {
    std::string account;
    std::int64_t amount_cents = 0;
    double rate = 0;
    bool urgent = false;
    currency in = currency::eur;
    std::vector<std::string> tags;
    party payee;
    std::vector<line> lines;
    std::optional<std::int16_t> priority;
    std::optional<std::string> memo;
    static constexpr field_doc field_docs[] = {
        {"account", "The account to debit."},
        {"amount_cents", "How much, in cents."},
    };
};
BOOST_DESCRIBE_STRUCT(order_args, (), (account, amount_cents, rate, urgent, in, tags, payee, lines, priority, memo))

struct read_args {
    std::string account;
};
BOOST_DESCRIBE_STRUCT(read_args, (), (account))

struct optional_only_args {
    std::optional<std::string> filter;
};
BOOST_DESCRIBE_STRUCT(optional_only_args, (), (filter))

struct narrow_args {
    std::uint8_t small = 0;
    std::int32_t medium = 0;
    std::uint64_t big = 0;
};
BOOST_DESCRIBE_STRUCT(narrow_args, (), (small, medium, big))

struct misspelled_doc_args {
    std::string account;
    static constexpr field_doc field_docs[] = {{"acount", "The account."}};
};
BOOST_DESCRIBE_STRUCT(misspelled_doc_args, (), (account))

struct repeated_doc_args {
    std::string account;
    static constexpr field_doc field_docs[] = {{"account", "One."}, {"account", "Two."}};
};
BOOST_DESCRIBE_STRUCT(repeated_doc_args, (), (account))

struct nested_misspelled_doc_args {
    std::vector<misspelled_doc_args> items;
};
BOOST_DESCRIBE_STRUCT(nested_misspelled_doc_args, (), (items))

struct audited_args : read_args {
    std::string reason;
};
BOOST_DESCRIBE_STRUCT(audited_args, (read_args), (reason))

}  // namespace shop
}  // namespace

namespace {

// Runs one awaitable to completion on a private io_context.
template <class T>
T run(boost::asio::awaitable<T> a) {
    boost::asio::io_context io;
    std::optional<T> out;
    std::exception_ptr failure;
    boost::asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, T v) {
        failure = e;
        if (!e) out.emplace(std::move(v));
    });
    io.run();
    if (failure) std::rethrow_exception(failure);
    return std::move(*out);
}

tool_id id_of(std::string_view uri) { return tool_id::parse(uri).value(); }

json::object const& schema_of(toolbox const& box, std::string_view uri) {
    auto const* t = box.find(id_of(uri));
    REQUIRE(t != nullptr);
    return t->schema;
}

json::object const& property(json::object const& schema, std::string_view name) {
    REQUIRE(schema.contains("properties"));
    auto const& props = schema.at("properties").as_object();
    REQUIRE(props.contains(name));
    return props.at(name).as_object();
}

bool required_has(json::object const& schema, std::string_view name) {
    auto const* req = schema.if_contains("required");
    if (!req) return false;
    for (auto const& v : req->as_array())
        if (v.as_string() == name) return true;
    return false;
}

// A box holding tool://shop/order, whose body counts its runs and echoes what it received.
struct order_fixture {
    toolbox box{"shop"};
    int runs = 0;
    std::optional<shop::order_args> received;

    order_fixture() {
        auto added = box.add<shop::order_args>("order", {.description = "Place an order."},
                                               [this](shop::order_args a) -> json::value {
                                                   ++runs;
                                                   received = a;
                                                   return json::object{{"ok", true}};
                                               });
        REQUIRE(added.has_value());
    }

    tool_result<json::value> call(std::string_view arguments_json) {
        return run(box.async_call(id_of("tool://shop/order"), json::parse(arguments_json), std::nullopt));
    }
};

constexpr std::string_view valid_order = R"({
    "account": "DE-1", "amount_cents": 1250, "rate": 0.5, "urgent": true, "in": "usd",
    "tags": ["a", "b"], "payee": {"name": "Ada"}, "lines": [{"sku": "x", "quantity": 2}]
})";

// Replaces (or, with a null value, removes) one top-level key of the valid order.
std::string order_with(std::string_view key, json::value replacement, bool remove = false) {
    auto v = json::parse(valid_order).as_object();
    if (remove)
        v.erase(key);
    else
        v[key] = std::move(replacement);
    return json::serialize(v);
}

// The call was refused as malformed, naming `field`, and the body never ran.
// True when the call is refused as malformed, naming `field`, and the body never ran; on a mismatch
// the assertion that uses it reports what came back instead.
bool refused_naming(order_fixture& f, std::string const& arguments, std::string_view field) {
    auto r = f.call(arguments);
    if (!r.has_error()) {
        UNSCOPED_INFO("the call succeeded");
        return false;
    }
    UNSCOPED_INFO("refused: " << to_string(r.error().kind) << " " << r.error().tool << ": " << r.error().detail
                              << " (body ran " << f.runs << " times)");
    return r.error().kind == tool_error_kind::malformed && r.error().tool == "tool://shop/order" &&
           r.error().detail.starts_with(std::string(field) + ": ") && f.runs == 0;
}

manifest manifest_granting(std::vector<tool_grant> grants) {
    manifest m;
    m.api_version = "airlock/v1";
    m.name = "teller";
    m.version = "1";
    m.tools = std::move(grants);
    return m;
}

tool_grant grant(std::string_view uri, bool mutates) {
    return tool_grant{.ref = id_of(uri), .mutates = mutates, .description = "granted"};
}

toolbox ledger_box(bool post_mutates = true) {
    toolbox box{"ledger"};
    auto body = [](shop::read_args) { return json::value(42); };
    REQUIRE(box.add<shop::read_args>("read", {.mutates = false}, body).has_value());
    REQUIRE(box.add<shop::read_args>("post", {.mutates = post_mutates}, body).has_value());
    return box;
}

}  // namespace

// --- schema -----------------------------------------------------------------------------------------

TEST_CASE("a tool's schema is an object that admits no properties beyond its members") {
    order_fixture f;
    auto const& s = schema_of(f.box, "tool://shop/order");
    CHECK(s.at("type") == "object");
    CHECK(s.at("additionalProperties") == false);
}

TEST_CASE("every described member is a property, in declaration order") {
    order_fixture f;
    auto const& props = schema_of(f.box, "tool://shop/order").at("properties").as_object();
    std::vector<std::string> names;
    for (auto const& kv : props) names.emplace_back(kv.key());
    CHECK(names == std::vector<std::string>{"account", "amount_cents", "rate", "urgent", "in", "tags", "payee",
                                            "lines", "priority", "memo"});
}

TEST_CASE("an integer member is described as an integer") {
    order_fixture f;
    CHECK(property(schema_of(f.box, "tool://shop/order"), "amount_cents").at("type") == "integer");
}

TEST_CASE("an integer member's schema states the range its type can hold") {
    toolbox box{"t"};
    REQUIRE(box.add<shop::narrow_args>("n", {}, [](shop::narrow_args) { return json::value(); }).has_value());
    auto const& s = schema_of(box, "tool://t/n");
    CHECK(property(s, "small").at("minimum") == 0);
    CHECK(property(s, "small").at("maximum") == 255);
    CHECK(property(s, "medium").at("minimum") == -2147483648LL);
    CHECK(property(s, "medium").at("maximum") == 2147483647);
    CHECK(property(s, "big").at("minimum") == 0);
    CHECK_FALSE(property(s, "big").contains("maximum"));
}

TEST_CASE("a floating-point member is described as a number") {
    order_fixture f;
    CHECK(property(schema_of(f.box, "tool://shop/order"), "rate").at("type") == "number");
}

TEST_CASE("a bool member is described as a boolean") {
    order_fixture f;
    CHECK(property(schema_of(f.box, "tool://shop/order"), "urgent").at("type") == "boolean");
}

TEST_CASE("a std::string member is described as a string") {
    order_fixture f;
    CHECK(property(schema_of(f.box, "tool://shop/order"), "account").at("type") == "string");
}

TEST_CASE("required lists exactly the members that are not optional") {
    order_fixture f;
    auto const& req = schema_of(f.box, "tool://shop/order").at("required").as_array();
    CHECK(req == json::array{"account", "amount_cents", "rate", "urgent", "in", "tags", "payee", "lines"});
}

TEST_CASE("an optional member is a property of its inner type but not required") {
    order_fixture f;
    auto const& s = schema_of(f.box, "tool://shop/order");
    CHECK(property(s, "memo").at("type") == "string");
    CHECK(property(s, "priority").at("type") == "integer");
    CHECK_FALSE(required_has(s, "memo"));
    CHECK_FALSE(required_has(s, "priority"));
}

TEST_CASE("a struct with only optional members has no required list") {
    toolbox box{"t"};
    auto body = [](shop::optional_only_args) { return json::value(); };
    REQUIRE(box.add<shop::optional_only_args>("list", {}, body).has_value());
    CHECK_FALSE(schema_of(box, "tool://t/list").contains("required"));
}

TEST_CASE("a described enum is a string limited to its enumerator names") {
    order_fixture f;
    auto const& in = property(schema_of(f.box, "tool://shop/order"), "in");
    CHECK(in.at("type") == "string");
    CHECK(in.at("enum") == json::array{"eur", "usd", "chf"});
}

TEST_CASE("a vector member is an array whose items have the element's schema") {
    order_fixture f;
    auto const& tags = property(schema_of(f.box, "tool://shop/order"), "tags");
    CHECK(tags.at("type") == "array");
    CHECK(tags.at("items").at("type") == "string");
}

TEST_CASE("a nested described struct is a nested object schema with its own required list") {
    order_fixture f;
    auto const& payee = property(schema_of(f.box, "tool://shop/order"), "payee");
    CHECK(payee.at("type") == "object");
    CHECK(payee.at("additionalProperties") == false);
    CHECK(property(payee, "name").at("type") == "string");
    CHECK(property(payee, "iban").at("type") == "string");
    CHECK(payee.at("required") == json::array{"name"});
}

TEST_CASE("an array of structs has object items") {
    order_fixture f;
    auto const& items = property(schema_of(f.box, "tool://shop/order"), "lines").at("items").as_object();
    CHECK(items.at("type") == "object");
    CHECK(property(items, "quantity").at("type") == "integer");
    CHECK(items.at("required") == json::array{"sku", "quantity"});
}

TEST_CASE("a struct's field_docs become its members' descriptions") {
    order_fixture f;
    auto const& s = schema_of(f.box, "tool://shop/order");
    CHECK(property(s, "account").at("description") == "The account to debit.");
    CHECK(property(s, "amount_cents").at("description") == "How much, in cents.");
}

TEST_CASE("a nested struct carries its own field_docs into the schema") {
    order_fixture f;
    auto const& payee = property(schema_of(f.box, "tool://shop/order"), "payee");
    CHECK(property(payee, "name").at("description") == "Who receives the money.");
}

TEST_CASE("a member without a field_doc has no description") {
    order_fixture f;
    CHECK_FALSE(property(schema_of(f.box, "tool://shop/order"), "rate").contains("description"));
}

TEST_CASE("a field_doc naming no member does not compile into a tool") {
    // toolbox::add static_asserts on this; the check itself is asserted here so it cannot quietly pass.
    STATIC_REQUIRE(detail::field_docs_are_valid<shop::order_args>());
    STATIC_REQUIRE_FALSE(detail::field_docs_are_valid<shop::misspelled_doc_args>());
}

TEST_CASE("a field_doc naming a member twice does not compile into a tool") {
    STATIC_REQUIRE_FALSE(detail::field_docs_are_valid<shop::repeated_doc_args>());
}

TEST_CASE("a misspelled field_doc in a nested struct does not compile into a tool") {
    STATIC_REQUIRE_FALSE(detail::field_docs_are_valid<shop::nested_misspelled_doc_args>());
}

TEST_CASE("members of a described base are arguments too") {
    toolbox box{"ledger"};
    std::optional<shop::audited_args> received;
    auto body = [&](shop::audited_args a) {
        received = a;
        return json::value();
    };
    REQUIRE(box.add<shop::audited_args>("audit", {}, body).has_value());
    CHECK(schema_of(box, "tool://ledger/audit").at("required") == json::array{"account", "reason"});
    auto r = run(box.async_call(id_of("tool://ledger/audit"), json::parse(R"({"account":"a","reason":"r"})"),
                                std::nullopt));
    REQUIRE(r.has_value());
    REQUIRE(received);
    CHECK(received->account == "a");
    CHECK(received->reason == "r");
}

// --- registration -----------------------------------------------------------------------------------

TEST_CASE("adding a tool names it under the box's server") {
    toolbox box{"ledger"};
    auto id = box.add<shop::read_args>("read", {}, [](shop::read_args) { return json::value(); });
    REQUIRE(id.has_value());
    CHECK(id->uri() == "tool://ledger/read");
    CHECK(box.ids() == std::vector<tool_id>{id_of("tool://ledger/read")});
}

TEST_CASE("a tool mutates unless its author says otherwise") {
    toolbox box{"ledger"};
    REQUIRE(box.add<shop::read_args>("post", {}, [](shop::read_args) { return json::value(); }).has_value());
    CHECK(box.find(id_of("tool://ledger/post"))->mutates);
}

TEST_CASE("a tool keeps the description and read-only claim it was added with") {
    toolbox box{"ledger"};
    REQUIRE(box.add<shop::read_args>("read", {.description = "Read a balance.", .mutates = false},
                                     [](shop::read_args) { return json::value(); }).has_value());
    auto const* t = box.find(id_of("tool://ledger/read"));
    REQUIRE(t);
    CHECK(t->description == "Read a balance.");
    CHECK_FALSE(t->mutates);
}

TEST_CASE("adding the same tool twice is refused and the first body stays") {
    toolbox box{"ledger"};
    REQUIRE(box.add<shop::read_args>("read", {}, [](shop::read_args) { return json::value("first"); }).has_value());
    auto again = box.add<shop::read_args>("read", {}, [](shop::read_args) { return json::value("second"); });
    REQUIRE(again.has_error());
    CHECK(again.error().code == "duplicate_tool");
    CHECK(again.error().message.find("tool://ledger/read") != std::string::npos);
    auto r = run(box.async_call(id_of("tool://ledger/read"), json::parse(R"({"account":"a"})"), std::nullopt));
    REQUIRE(r.has_value());
    CHECK(*r == "first");
}

TEST_CASE("a tool name that is not a valid ToolId component is refused") {
    toolbox box{"ledger"};
    auto added = box.add<shop::read_args>("read-balance", {}, [](shop::read_args) { return json::value(); });
    REQUIRE(added.has_error());
    CHECK(added.error().code == "invalid_tool_id");
    CHECK(added.error().message.find("tool name") != std::string::npos);
    CHECK(box.ids().empty());
}

TEST_CASE("a box with an invalid server name refuses every tool, naming the server") {
    toolbox box{"led ger"};
    auto added = box.add<shop::read_args>("read", {}, [](shop::read_args) { return json::value(); });
    REQUIRE(added.has_error());
    CHECK(added.error().message.find("server name") != std::string::npos);
}

// --- calls ------------------------------------------------------------------------------------------

TEST_CASE("arguments that fit reach the body as the typed struct") {
    order_fixture f;
    auto r = f.call(valid_order);
    REQUIRE(r.has_value());
    CHECK(*r == json::object{{"ok", true}});
    REQUIRE(f.runs == 1);
    auto const& a = *f.received;
    CHECK(a.account == "DE-1");
    CHECK(a.amount_cents == 1250);
    CHECK(a.rate == 0.5);
    CHECK(a.urgent);
    CHECK(a.in == shop::currency::usd);
    CHECK(a.tags == std::vector<std::string>{"a", "b"});
    CHECK(a.payee.name == "Ada");
    CHECK_FALSE(a.payee.iban);
    REQUIRE(a.lines.size() == 1);
    CHECK(a.lines[0].sku == "x");
    CHECK(a.lines[0].quantity == 2);
}

TEST_CASE("an absent optional member arrives empty and a present one arrives set") {
    order_fixture f;
    REQUIRE(f.call(order_with("memo", "thanks")).has_value());
    CHECK(f.received->memo == "thanks");
    CHECK_FALSE(f.received->priority);
}

TEST_CASE("an integral number written with a fraction of zero fits an integer member") {
    order_fixture f;
    REQUIRE(f.call(order_with("amount_cents", 1250.0)).has_value());
    CHECK(f.received->amount_cents == 1250);
}

TEST_CASE("an integer fits a floating-point member") {
    order_fixture f;
    REQUIRE(f.call(order_with("rate", 2)).has_value());
    CHECK(f.received->rate == 2.0);
}

TEST_CASE("null arguments are read as no arguments") {
    toolbox box{"t"};
    int runs = 0;
    REQUIRE(box.add<shop::optional_only_args>("list", {}, [&](shop::optional_only_args a) {
        ++runs;
        return json::value(a.filter.has_value());
    }).has_value());
    auto r = run(box.async_call(id_of("tool://t/list"), json::value(), std::nullopt));
    REQUIRE(r.has_value());
    CHECK(*r == false);
    CHECK(runs == 1);
}

TEST_CASE("a body's failure comes back with the tool's id filled in") {
    toolbox box{"ledger"};
    REQUIRE(box.add<shop::read_args>("post", {}, [](shop::read_args) -> tool_result<json::value> {
        return tool_error{tool_error_kind::tool_failed, "", "insufficient funds"};
    }).has_value());
    auto r = run(box.async_call(id_of("tool://ledger/post"), json::parse(R"({"account":"a"})"), std::nullopt));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == tool_error_kind::tool_failed);
    CHECK(r.error().tool == "tool://ledger/post");
    CHECK(r.error().detail == "insufficient funds");
}

TEST_CASE("a body that is itself a coroutine is awaited") {
    toolbox box{"ledger"};
    REQUIRE(box.add<shop::read_args>("read", {}, [](shop::read_args a) -> boost::asio::awaitable<json::value> {
        co_return json::value(a.account + "!");
    }).has_value());
    auto r = run(box.async_call(id_of("tool://ledger/read"), json::parse(R"({"account":"a"})"), std::nullopt));
    REQUIRE(r.has_value());
    CHECK(*r == "a!");
}

TEST_CASE("a call to a tool the box does not hold is refused and did not happen") {
    order_fixture f;
    auto r = run(f.box.async_call(id_of("tool://shop/refund"), json::object{}, std::nullopt));
    REQUIRE(r.has_error());
    CHECK(r.error().kind == tool_error_kind::refused);
    CHECK(r.error().tool == "tool://shop/refund");
    CHECK(disposition_of(r.error().kind) == disposition::did_not_happen);
    CHECK(f.runs == 0);
}

TEST_CASE("every tool in a box runs in this process") {
    order_fixture f;
    CHECK(f.box.destination_of(id_of("tool://shop/order")) == destination{local_destination{}});
}

// --- refusals: each is malformed, names the field, and the body never runs ------------------------------

TEST_CASE("a missing required member is refused before the body runs") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("account", nullptr, true), "arguments.account"));
}

TEST_CASE("a missing required member of a nested struct is refused, naming its path") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("payee", json::object{}), "arguments.payee.name"));
}

TEST_CASE("a string where an integer belongs is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("amount_cents", "1250"), "arguments.amount_cents"));
}

TEST_CASE("a number with a fractional part where an integer belongs is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("amount_cents", 12.5), "arguments.amount_cents"));
}

TEST_CASE("an integer outside its member type's range is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("priority", 40000), "arguments.priority"));
}

TEST_CASE("a negative number for an unsigned member is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("lines", json::parse(R"([{"sku":"x","quantity":-1}])")),
                           "arguments.lines[0].quantity"));
}

TEST_CASE("a string where a boolean belongs is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("urgent", "true"), "arguments.urgent"));
}

TEST_CASE("a number where a string belongs is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("account", 17), "arguments.account"));
}

TEST_CASE("a string where a number belongs is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("rate", "0.5"), "arguments.rate"));
}

TEST_CASE("a name that is not one of the enum's is refused, listing the names") {
    order_fixture f;
    auto arguments = order_with("in", "EUR");
    CHECK(refused_naming(f, arguments, "arguments.in"));
    CHECK(f.call(arguments).error().detail.find(R"("eur", "usd", "chf")") != std::string::npos);
}

TEST_CASE("a non-array where a vector belongs is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("tags", "a"), "arguments.tags"));
}

TEST_CASE("an element of the wrong type in an array is refused, naming its index") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("tags", json::array{"a", 2}), "arguments.tags[1]"));
}

TEST_CASE("an extra key in the arguments is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("acount", "DE-1"), "arguments.acount"));
}

TEST_CASE("an extra key in a nested struct is refused") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("payee", json::parse(R"({"name":"Ada","nmae":"Ada"})")),
                           "arguments.payee.nmae"));
}

TEST_CASE("null for an optional member is refused: absent is how to say empty") {
    order_fixture f;
    CHECK(refused_naming(f, order_with("memo", nullptr), "arguments.memo"));
}

TEST_CASE("arguments that are not an object are refused") {
    order_fixture f;
    auto r = f.call(R"(["DE-1", 1250])");
    REQUIRE(r.has_error());
    CHECK(r.error().kind == tool_error_kind::malformed);
    CHECK(r.error().detail == "arguments: expected an object, got an array");
    CHECK(f.runs == 0);
}

TEST_CASE("a refusal says what kind of value arrived but never the value itself") {
    order_fixture f;
    auto r = f.call(order_with("amount_cents", "very-secret-1250"));
    REQUIRE(r.has_error());
    CHECK(r.error().detail == "arguments.amount_cents: expected an integer, got a string");
}

// --- check_against ----------------------------------------------------------------------------------

TEST_CASE("a manifest that grants exactly the box's tools has no findings") {
    auto box = ledger_box();
    auto m = manifest_granting({grant("tool://ledger/read", false), grant("tool://ledger/post", true)});
    CHECK(box.check_against(m).empty());
}

TEST_CASE("a tool the manifest does not grant is reported as not granted") {
    auto box = ledger_box();
    auto findings = box.check_against(manifest_granting({grant("tool://ledger/read", false)}));
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].kind == drift_kind::not_granted);
    CHECK(findings[0].tool == id_of("tool://ledger/post"));
    CHECK(findings[0].message.find("tool://ledger/post") != std::string::npos);
}

TEST_CASE("a grant on the box's server that nothing implements is reported as not implemented") {
    auto box = ledger_box();
    auto findings = box.check_against(manifest_granting(
        {grant("tool://ledger/read", false), grant("tool://ledger/post", true), grant("tool://ledger/refund", true)}));
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].kind == drift_kind::not_implemented);
    CHECK(findings[0].tool == id_of("tool://ledger/refund"));
    CHECK(findings[0].message.find("tool://ledger/refund") != std::string::npos);
}

TEST_CASE("grants on other servers are not the box's to implement") {
    auto box = ledger_box();
    auto findings = box.check_against(manifest_granting(
        {grant("tool://ledger/read", false), grant("tool://ledger/post", true), grant("tool://mail/send", true)}));
    CHECK(findings.empty());
}

TEST_CASE("a mutating tool granted as read-only is reported") {
    auto box = ledger_box();
    auto findings =
        box.check_against(manifest_granting({grant("tool://ledger/read", false), grant("tool://ledger/post", false)}));
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].kind == drift_kind::mutates_but_granted_read_only);
    CHECK(findings[0].tool == id_of("tool://ledger/post"));
}

TEST_CASE("a read-only tool granted as mutating is allowed: the operator may be stricter than the author") {
    auto box = ledger_box();
    auto findings =
        box.check_against(manifest_granting({grant("tool://ledger/read", true), grant("tool://ledger/post", true)}));
    CHECK(findings.empty());
}

TEST_CASE("a grant that repeats a typed tool's arguments schema is reported") {
    auto box = ledger_box();
    auto read = grant("tool://ledger/read", false);
    read.arguments = json::parse(R"({"type":"object","properties":{"account":{"type":"string"}}})");
    auto findings = box.check_against(manifest_granting({read, grant("tool://ledger/post", true)}));
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].kind == drift_kind::grant_repeats_arguments);
    CHECK(findings[0].tool == id_of("tool://ledger/read"));
    CHECK(findings[0].message.find("arguments") != std::string::npos);
}

TEST_CASE("an arguments schema on a grant for another server is not the box's to judge") {
    auto box = ledger_box();
    auto send = grant("tool://mail/send", true);
    send.arguments = json::object{{"type", "object"}};
    auto findings = box.check_against(
        manifest_granting({grant("tool://ledger/read", false), grant("tool://ledger/post", true), send}));
    CHECK(findings.empty());
}

TEST_CASE("every disagreement with the manifest is reported at once") {
    toolbox box{"ledger"};
    REQUIRE(box.add<shop::read_args>("post", {}, [](shop::read_args) { return json::value(); }).has_value());
    REQUIRE(box.add<shop::read_args>("audit", {}, [](shop::read_args) { return json::value(); }).has_value());
    auto post = grant("tool://ledger/post", false);
    post.arguments = json::object{{"type", "object"}};
    auto findings = box.check_against(manifest_granting({post, grant("tool://ledger/refund", true)}));
    REQUIRE(findings.size() == 4);
    // ToolId order for the box's tools (audit < post), then unimplemented grants in manifest order.
    CHECK(findings[0].kind == drift_kind::not_granted);
    CHECK(findings[0].tool == id_of("tool://ledger/audit"));
    CHECK(findings[1].kind == drift_kind::mutates_but_granted_read_only);
    CHECK(findings[1].tool == id_of("tool://ledger/post"));
    CHECK(findings[2].kind == drift_kind::grant_repeats_arguments);
    CHECK(findings[2].tool == id_of("tool://ledger/post"));
    CHECK(findings[3].kind == drift_kind::not_implemented);
    CHECK(findings[3].tool == id_of("tool://ledger/refund"));
}

TEST_CASE("drift kinds have stable names") {
    CHECK(to_string(drift_kind::not_granted) == "not_granted");
    CHECK(to_string(drift_kind::not_implemented) == "not_implemented");
    CHECK(to_string(drift_kind::mutates_but_granted_read_only) == "mutates_but_granted_read_only");
    CHECK(to_string(drift_kind::grant_repeats_arguments) == "grant_repeats_arguments");
}
