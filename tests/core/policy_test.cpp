#include "core/policy.hpp"

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include <set>
#include <string>

using namespace airlock::core;

namespace {

tool_id tid(std::string_view uri) { return tool_id::parse(uri).value(); }

// What a model chose: untrusted, from the model.
label model_label() { return label{{"model"}, trust::untrusted, sensitivity::public_}; }
// What the operator vouched for: trusted, from the operator.
label operator_label() { return label{{"operator"}, trust::trusted, sensitivity::public_}; }

label with_sensitivity(label l, sensitivity s) {
    l.sensitivity = s;
    return l;
}

tainted args(std::string_view json, label whole, std::vector<std::pair<std::string, label>> fields = {}) {
    return tainted{boost::json::parse(json), std::move(whole), std::move(fields)};
}

// The seed's TELLER manifest (shared/seeds/001_*.txt), as the parser would produce it.
manifest teller() {
    manifest m;
    m.api_version = "agentplane.hupe1980.github.io/v1alpha1";
    m.name = "teller";
    m.version = "1.0.0";
    m.max_sensitivity_egress = sensitivity::internal;

    tool_grant read{.ref = tid("tool://ledger/read"),
                    .mutates = false,
                    .max_sensitivity = sensitivity::internal,
                    .description = "Read a ledger account's balance."};
    // Mutating; /account is the selector a model must not pick, the amount is content.
    tool_grant post{.ref = tid("tool://ledger/post"),
                    .mutates = true,
                    .max_sensitivity = sensitivity::internal,
                    .description = "Post an amount to an account.",
                    .protected_fields = {protected_field{"/account", true, {}, std::nullopt}}};

    m.tools = {read, post};
    return m;
}

// A mutating grant with no protected fields: the shape the taint gate exists for.
tool_grant bare_mutating_grant() {
    return tool_grant{.ref = tid("tool://ledger/wipe"), .mutates = true, .description = "Wipe an account."};
}

tool_grant grant_protecting(protected_field field) {
    return tool_grant{.ref = tid("tool://ledger/post"),
                      .mutates = true,
                      .description = "Post an amount to an account.",
                      .protected_fields = {std::move(field)}};
}

egress_allowlist local_only() {
    egress_allowlist a;
    REQUIRE(a.add(local_destination{}).has_value());
    return a;
}

egress_allowlist api_example_https() {
    egress_allowlist a;
    REQUIRE(a.add(remote_destination{"https", "api.example.com", 443}).has_value());
    return a;
}

deny_reason reason_of(decision const& d) {
    REQUIRE_FALSE(d.allowed());
    return d.refusal()->reason;
}

}  // namespace

// ── reasons and the model-facing text ───────────────────────────────────────

TEST_CASE("every deny reason has its own stable journal code") {
    std::vector<std::pair<deny_reason, std::string_view>> const expected{
        {deny_reason::not_granted, "not_granted"},
        {deny_reason::egress_ceiling, "egress_ceiling"},
        {deny_reason::tainted_mutation, "tainted_mutation"},
        {deny_reason::protected_field_missing, "protected_field_missing"},
        {deny_reason::protected_field_untrusted, "protected_field_untrusted"},
        {deny_reason::protected_field_source, "protected_field_source"},
        {deny_reason::protected_field_sensitivity, "protected_field_sensitivity"},
        {deny_reason::destination_not_allowed, "destination_not_allowed"},
    };
    std::set<std::string_view> seen;
    for (auto const& [reason, code] : expected) {
        CHECK(to_string(reason) == code);
        CHECK(parse_deny_reason(code) == reason);
        seen.insert(to_string(reason));
    }
    CHECK(seen.size() == expected.size());
    CHECK_FALSE(parse_deny_reason("Not_Granted").has_value());
}

TEST_CASE("a refusal tells the model only that it is not permitted, whatever the reason") {
    for (auto r : {deny_reason::not_granted, deny_reason::egress_ceiling, deny_reason::tainted_mutation,
                   deny_reason::protected_field_missing, deny_reason::protected_field_untrusted,
                   deny_reason::protected_field_source, deny_reason::protected_field_sensitivity,
                   deny_reason::destination_not_allowed}) {
        auto const d = decision::deny(r, "/account is untrusted");
        CHECK(d.model_text() == "not permitted");
        CHECK(d.refusal()->detail == "/account is untrusted");
    }
    auto const ok = decision::allow();
    CHECK(ok.allowed());
    CHECK_FALSE(ok.refusal().has_value());
}

// ── grant ──────────────────────────────────────────────────────────────────

TEST_CASE("a tool the manifest never listed is not callable") {
    auto const d = grant_gate(teller(), tid("tool://ledger/write"));
    CHECK(reason_of(d) == deny_reason::not_granted);
    CHECK(d.refusal()->detail.find("tool://ledger/write") != std::string::npos);
}

TEST_CASE("a granted tool passes the grant gate") {
    CHECK(grant_gate(teller(), tid("tool://ledger/read")).allowed());
}

TEST_CASE("a tool id differing from a grant only by case is not granted") {
    CHECK(reason_of(grant_gate(teller(), tid("tool://ledger/Read"))) == deny_reason::not_granted);
    CHECK(reason_of(grant_gate(teller(), tid("tool://Ledger/read"))) == deny_reason::not_granted);
}

// ── egress ceiling ─────────────────────────────────────────────────────────

TEST_CASE("arguments more sensitive than the grant ceiling are refused") {
    manifest m = teller();
    m.max_sensitivity_egress.reset();
    auto const a = args(R"({"account":"AC-1"})", with_sensitivity(operator_label(), sensitivity::confidential));
    auto const d = egress_ceiling_gate(m, m.tools[0], std::nullopt, a);
    CHECK(reason_of(d) == deny_reason::egress_ceiling);
    CHECK(d.refusal()->detail.find("grant") != std::string::npos);
}

TEST_CASE("arguments exactly at the egress ceiling pass") {
    manifest const m = teller();
    auto const a = args(R"({"account":"AC-1"})", with_sensitivity(operator_label(), sensitivity::internal));
    CHECK(egress_ceiling_gate(m, m.tools[0], sensitivity::internal, a).allowed());
}

TEST_CASE("the manifest ceiling binds when it is the lowest") {
    manifest m = teller();
    m.tools[0].max_sensitivity = sensitivity::secret;
    m.max_sensitivity_egress = sensitivity::internal;
    auto const a = args(R"({"account":"AC-1"})", with_sensitivity(operator_label(), sensitivity::confidential));
    auto const d = egress_ceiling_gate(m, m.tools[0], sensitivity::secret, a);
    CHECK(reason_of(d) == deny_reason::egress_ceiling);
    CHECK(d.refusal()->detail.find("manifest") != std::string::npos);
}

TEST_CASE("the tool's own ceiling binds when it is the lowest") {
    manifest m = teller();
    m.tools[0].max_sensitivity = sensitivity::secret;
    m.max_sensitivity_egress = sensitivity::secret;
    auto const a = args(R"({"account":"AC-1"})", with_sensitivity(operator_label(), sensitivity::internal));
    auto const d = egress_ceiling_gate(m, m.tools[0], sensitivity::public_, a);
    CHECK(reason_of(d) == deny_reason::egress_ceiling);
    CHECK(d.refusal()->detail.find("tool") != std::string::npos);
}

TEST_CASE("absent ceilings do not constrain egress") {
    manifest m = teller();
    m.tools[0].max_sensitivity.reset();
    m.max_sensitivity_egress.reset();
    auto const a = args(R"({"account":"AC-1"})", with_sensitivity(operator_label(), sensitivity::secret));
    CHECK(egress_ceiling_gate(m, m.tools[0], std::nullopt, a).allowed());
}

TEST_CASE("one sensitive field raises the sensitivity of the whole call") {
    manifest const m = teller();
    auto const a = args(R"({"account":"AC-1","note":"pin 1234"})", operator_label(),
                        {{"/note", with_sensitivity(operator_label(), sensitivity::secret)}});
    CHECK(reason_of(egress_ceiling_gate(m, m.tools[0], std::nullopt, a)) == deny_reason::egress_ceiling);
}

// ── taint ──────────────────────────────────────────────────────────────────

TEST_CASE("a mutating grant without protected fields refuses model-chosen arguments") {
    auto const d = taint_gate(bare_mutating_grant(), args(R"({"account":"AC-1"})", model_label()));
    CHECK(reason_of(d) == deny_reason::tainted_mutation);
}

TEST_CASE("a mutating grant without protected fields accepts trusted arguments") {
    CHECK(taint_gate(bare_mutating_grant(), args(R"({"account":"AC-1"})", operator_label())).allowed());
}

TEST_CASE("a read-only grant accepts model-chosen arguments") {
    CHECK(taint_gate(teller().tools[0], args(R"({"account":"AC-1"})", model_label())).allowed());
}

TEST_CASE("one untrusted field taints a mutating call with otherwise trusted arguments") {
    auto const a = args(R"({"account":"AC-1","memo":"x"})", operator_label(), {{"/memo", model_label()}});
    CHECK(reason_of(taint_gate(bare_mutating_grant(), a)) == deny_reason::tainted_mutation);
}

TEST_CASE("declared protected fields take the place of the whole-value taint gate") {
    CHECK(taint_gate(teller().tools[1], args(R"({"account":"AC-1","amount":5})", model_label())).allowed());
}

// ── protected fields ───────────────────────────────────────────────────────

TEST_CASE("a protected field missing from the arguments is refused even when they are trusted") {
    auto const d = protected_fields_gate(teller().tools[1], args(R"({"amount":5})", operator_label()));
    CHECK(reason_of(d) == deny_reason::protected_field_missing);
    CHECK(d.refusal()->detail.find("/account") != std::string::npos);
}

TEST_CASE("a protected field whose value is null is present, not missing") {
    auto const d = protected_fields_gate(teller().tools[1], args(R"({"account":null})", operator_label()));
    CHECK(d.allowed());
}

TEST_CASE("a require_trusted field chosen by the model is refused") {
    auto const d = protected_fields_gate(teller().tools[1], args(R"({"account":"AC-1","amount":5})", model_label()));
    CHECK(reason_of(d) == deny_reason::protected_field_untrusted);
    CHECK(d.refusal()->detail.find("/account") != std::string::npos);
}

TEST_CASE("a require_trusted field vouched for by the operator passes") {
    auto const a = args(R"({"account":"AC-1","amount":5})", model_label(), {{"/account", operator_label()}});
    CHECK(protected_fields_gate(teller().tools[1], a).allowed());
}

TEST_CASE("an untrusted part nested inside a protected field taints the field") {
    auto const a = args(R"({"account":{"bank":"B","id":"AC-1"}})", operator_label(), {{"/account/id", model_label()}});
    CHECK(reason_of(protected_fields_gate(teller().tools[1], a)) == deny_reason::protected_field_untrusted);
}

TEST_CASE("a protected field inherits the label of its nearest labelled ancestor") {
    auto const g = grant_protecting(protected_field{"/target/account", true, {}, std::nullopt});
    auto const a = args(R"({"target":{"account":"AC-1"}})", operator_label(), {{"/target", model_label()}});
    CHECK(reason_of(protected_fields_gate(g, a)) == deny_reason::protected_field_untrusted);
}

TEST_CASE("a field whose sources are all allowed passes") {
    auto const g = grant_protecting(protected_field{"/account", false, {"directory", "operator"}, std::nullopt});
    label both = operator_label();
    both.sources = {"directory", "operator"};
    auto const a = args(R"({"account":"AC-1"})", model_label(), {{"/account", both}});
    CHECK(protected_fields_gate(g, a).allowed());
}

TEST_CASE("a field with one source outside allowed_sources is refused") {
    auto const g = grant_protecting(protected_field{"/account", false, {"directory"}, std::nullopt});
    label mixed = operator_label();
    mixed.sources = {"directory", "model"};
    auto const d = protected_fields_gate(g, args(R"({"account":"AC-1"})", operator_label(), {{"/account", mixed}}));
    CHECK(reason_of(d) == deny_reason::protected_field_source);
    CHECK(d.refusal()->detail.find("/account") != std::string::npos);
}

TEST_CASE("a field with no source at all does not satisfy allowed_sources") {
    auto const g = grant_protecting(protected_field{"/account", false, {"directory"}, std::nullopt});
    label nameless = operator_label();
    nameless.sources.clear();
    auto const d = protected_fields_gate(g, args(R"({"account":"AC-1"})", nameless));
    CHECK(reason_of(d) == deny_reason::protected_field_source);
}

TEST_CASE("a protected field above its own sensitivity ceiling is refused") {
    auto const g = grant_protecting(protected_field{"/account", false, {}, sensitivity::internal});
    auto const a = args(R"({"account":"AC-1"})", operator_label(),
                        {{"/account", with_sensitivity(operator_label(), sensitivity::confidential)}});
    CHECK(reason_of(protected_fields_gate(g, a)) == deny_reason::protected_field_sensitivity);
}

TEST_CASE("a protected field exactly at its sensitivity ceiling passes") {
    auto const g = grant_protecting(protected_field{"/account", false, {}, sensitivity::internal});
    auto const a = args(R"({"account":"AC-1"})", operator_label(),
                        {{"/account", with_sensitivity(operator_label(), sensitivity::internal)}});
    CHECK(protected_fields_gate(g, a).allowed());
}

TEST_CASE("a protected field's sensitivity ceiling ignores a sensitive sibling") {
    auto const g = grant_protecting(protected_field{"/account", false, {}, sensitivity::public_});
    auto const a = args(R"({"account":"AC-1","memo":"m"})", operator_label(),
                        {{"/memo", with_sensitivity(operator_label(), sensitivity::secret)}});
    CHECK(protected_fields_gate(g, a).allowed());
}

// ── destination ────────────────────────────────────────────────────────────

TEST_CASE("a destination not in the egress allowlist is refused") {
    auto const d = destination_gate(api_example_https(), remote_destination{"https", "evil.com", 443});
    CHECK(reason_of(d) == deny_reason::destination_not_allowed);
    CHECK(d.refusal()->detail.find("evil.com") != std::string::npos);
}

TEST_CASE("an empty egress allowlist refuses even an in-process tool") {
    CHECK(reason_of(destination_gate(egress_allowlist{}, local_destination{})) == deny_reason::destination_not_allowed);
}

TEST_CASE("a listed remote destination passes") {
    CHECK(destination_gate(api_example_https(), remote_destination{"https", "api.example.com", 443}).allowed());
}

TEST_CASE("a host differing from the allowlist only by case passes") {
    CHECK(destination_gate(api_example_https(), remote_destination{"https", "API.Example.COM", 443}).allowed());
}

TEST_CASE("a host that merely starts or ends with a listed host is refused") {
    auto const allow = api_example_https();
    CHECK(reason_of(destination_gate(allow, remote_destination{"https", "api.example.com.evil.com", 443})) ==
          deny_reason::destination_not_allowed);
    CHECK(reason_of(destination_gate(allow, remote_destination{"https", "evil-api.example.com", 443})) ==
          deny_reason::destination_not_allowed);
    CHECK(reason_of(destination_gate(allow, remote_destination{"https", "x.api.example.com", 443})) ==
          deny_reason::destination_not_allowed);
}

TEST_CASE("a listed host on another port is refused") {
    CHECK(reason_of(destination_gate(api_example_https(), remote_destination{"https", "api.example.com", 8443})) ==
          deny_reason::destination_not_allowed);
}

TEST_CASE("a listed host under another scheme is refused") {
    CHECK(reason_of(destination_gate(api_example_https(), remote_destination{"http", "api.example.com", 443})) ==
          deny_reason::destination_not_allowed);
}

TEST_CASE("a stdio child passes only with exactly the listed argv0") {
    egress_allowlist allow;
    REQUIRE(allow.add(process_destination{"/usr/bin/ledger-mcp"}).has_value());
    CHECK(destination_gate(allow, process_destination{"/usr/bin/ledger-mcp"}).allowed());
    CHECK(reason_of(destination_gate(allow, process_destination{"/usr/bin/Ledger-mcp"})) ==
          deny_reason::destination_not_allowed);
    CHECK(reason_of(destination_gate(allow, process_destination{"ledger-mcp"})) ==
          deny_reason::destination_not_allowed);
    CHECK(reason_of(destination_gate(allow, local_destination{})) == deny_reason::destination_not_allowed);
}

TEST_CASE("a listed in-process destination passes") {
    CHECK(destination_gate(local_only(), local_destination{}).allowed());
}

TEST_CASE("the egress allowlist refuses entries that read like patterns or name nothing") {
    egress_allowlist allow;
    auto const wildcard = allow.add(remote_destination{"https", "*.example.com", 443});
    REQUIRE_FALSE(wildcard.has_value());
    CHECK(wildcard.error().message.find("*.example.com") != std::string::npos);
    CHECK_FALSE(allow.add(remote_destination{"https", ".example.com", 443}).has_value());
    CHECK_FALSE(allow.add(remote_destination{"https", "", 443}).has_value());
    CHECK_FALSE(allow.add(remote_destination{"https", "api.example.com", 0}).has_value());
    CHECK_FALSE(allow.add(remote_destination{"HTTPS", "api.example.com", 443}).has_value());
    CHECK_FALSE(allow.add(process_destination{""}).has_value());
    CHECK(allow.entries().empty());
}

// ── evaluate: all gates in order ───────────────────────────────────────────

TEST_CASE("seed scenario 3: a model-chosen account on ledger/post is refused on /account") {
    auto const d = evaluate(teller(), local_only(), tid("tool://ledger/post"),
                            args(R"({"account":"AC-1","amount":1000000})", model_label()), local_destination{});
    CHECK(reason_of(d) == deny_reason::protected_field_untrusted);
    CHECK(d.refusal()->detail.find("/account") != std::string::npos);
    CHECK(d.model_text() == "not permitted");
}

TEST_CASE("seed scenario 3: a trusted account beside a model-chosen amount passes") {
    auto const a = args(R"({"account":"AC-1","amount":1000000})", model_label(), {{"/account", operator_label()}});
    CHECK(evaluate(teller(), local_only(), tid("tool://ledger/post"), a, local_destination{}).allowed());
}

TEST_CASE("evaluate refuses an ungranted tool before looking at its destination or arguments") {
    auto const d = evaluate(teller(), egress_allowlist{}, tid("tool://ledger/write"),
                            args(R"({"account":"AC-1"})", model_label()), remote_destination{"https", "evil.com", 443});
    CHECK(reason_of(d) == deny_reason::not_granted);
}

TEST_CASE("evaluate refuses an unlisted destination before judging the arguments") {
    auto const d = evaluate(teller(), api_example_https(), tid("tool://ledger/post"),
                            args(R"({"account":"AC-1"})", model_label()), remote_destination{"https", "evil.com", 443});
    CHECK(reason_of(d) == deny_reason::destination_not_allowed);
}

TEST_CASE("evaluate applies the taint gate to a mutating grant without protected fields") {
    manifest m = teller();
    m.tools.push_back(bare_mutating_grant());
    auto const d = evaluate(m, local_only(), tid("tool://ledger/wipe"), args(R"({"account":"AC-1"})", model_label()),
                            local_destination{});
    CHECK(reason_of(d) == deny_reason::tainted_mutation);
}

TEST_CASE("evaluate applies the egress ceiling to a call that passes every other gate") {
    auto const a = args(R"({"account":"AC-1"})", with_sensitivity(model_label(), sensitivity::confidential));
    auto const d = evaluate(teller(), local_only(), tid("tool://ledger/read"), a, local_destination{});
    CHECK(reason_of(d) == deny_reason::egress_ceiling);
}

TEST_CASE("evaluate applies the tool's own ceiling when one is given") {
    auto const a = args(R"({"account":"AC-1"})", with_sensitivity(model_label(), sensitivity::internal));
    CHECK(evaluate(teller(), local_only(), tid("tool://ledger/read"), a, local_destination{}).allowed());
    CHECK(reason_of(evaluate(teller(), local_only(), tid("tool://ledger/read"), a, local_destination{},
                             sensitivity::public_)) == deny_reason::egress_ceiling);
}

TEST_CASE("a model may choose what to read") {
    CHECK(evaluate(teller(), local_only(), tid("tool://ledger/read"), args(R"({"account":"AC-1"})", model_label()),
                   local_destination{})
              .allowed());
}

// ── grants a caller with one label can never use ─────────────────────────────

TEST_CASE("a mutating grant is unusable by an untrusted caller unless its protected fields can pass") {
    label alice{{"principal:alice"}, trust::untrusted, sensitivity::public_};
    CHECK(reason_of(refused_whatever_the_arguments(bare_mutating_grant(), alice)) == deny_reason::tainted_mutation);
    CHECK(reason_of(refused_whatever_the_arguments(teller().tools[1], alice)) == deny_reason::protected_field_untrusted);
    // Fields that only ask for a source the caller's arguments carry can pass.
    auto const by_source = grant_protecting(protected_field{"/account", false, {"principal:alice"}, std::nullopt});
    CHECK(refused_whatever_the_arguments(by_source, alice).allowed());
    auto const other_source = grant_protecting(protected_field{"/account", false, {"principal:bob"}, std::nullopt});
    CHECK(reason_of(refused_whatever_the_arguments(other_source, alice)) == deny_reason::protected_field_source);
    // Read-only grants, and any grant for a trusted caller, stay usable.
    CHECK(refused_whatever_the_arguments(teller().tools[0], alice).allowed());
    CHECK(refused_whatever_the_arguments(bare_mutating_grant(), operator_label()).allowed());
}
