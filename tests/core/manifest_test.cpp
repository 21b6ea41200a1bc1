#include "core/manifest.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using namespace airlock::core;
using Catch::Matchers::Contains;

namespace {

// Copied unmodified from shared/seeds/001_110a297749c9f406.txt (agentplane's examples/tool_loop.rs).
constexpr std::string_view teller_yaml = R"yaml(
apiVersion: agentplane.hupe1980.github.io/v1alpha1
kind: Agent
metadata: { name: teller, version: "1.0.0" }
spec:
  identity:
    role: "Answer questions about a ledger account."
    constraints: "Use the tools. Do not guess a balance."
  capabilities:
    provides: [ledger.ask]
  models:
    privileged: { provider: fake, model: teller-1 }
  security:
    max_sensitivity_egress: internal
  tools:
    # Exactly what this agent may reach. A tool absent from here cannot be
    # called however the model spells it — the grant is the operator's decision
    # and the model's suggestion is only a suggestion.
    - ref: tool://ledger/read
      mutates: false
      max_sensitivity: internal
      description: Read a ledger account's balance.
    - ref: tool://ledger/post
      # Mutating, and it names the one argument that carries authority. The
      # amount is ordinary content a model may choose; **which account** is a
      # selector, and a model does not get to pick it.
      #
      # Declaring the field is also what makes the grant *reachable* at all: a
      # `mutates: true` grant with no `protected_fields` on a tool-calling agent
      # is refused at parse, because the whole argument bundle carries the
      # completion's untrusted label and the taint gate would refuse every call
      # — a grant that reads as a capability and fires never.
      mutates: true
      max_sensitivity: internal
      description: Post an amount to an account.
      protected_fields:
        - path: /account
          require_trusted: true
  execution: { kind: tool-calling, max_turns: 4 }
  budgets:
    max_tokens: 100000
)yaml";

// A valid tool-calling agent that exercises every field; refusal tests break one thing in it.
constexpr std::string_view clerk_yaml = R"yaml(apiVersion: airlock/v1
kind: Agent
metadata:
  name: clerk
  version: "2.1.0"
spec:
  identity:
    role: "Post entries with tool://ledger/post after checking tool://ledger/read."
    constraints:
      - "Never guess."
      - "Ask first."
  capabilities:
    provides: [ledger.post]
  models:
    privileged:
      provider: anthropic
      model: claude
      max_tokens: 4096
  security:
    max_sensitivity_egress: confidential
  tools:
    - ref: tool://ledger/read
      mutates: false
      description: Read a balance.
    - ref: tool://ledger/post
      description: Post an amount.
      protected_fields:
        - path: /account
          require_trusted: true
        - path: /memo
          max_sensitivity: internal
  execution:
    kind: tool-calling
    max_turns: 6
  budgets:
    max_steps: 20
    max_effects: 5
    max_tokens: 50000
    max_wallclock_secs: 120
)yaml";

// Pieces of clerk_yaml, cut out whole by the tests that need a manifest without them.
constexpr std::string_view clerk_role_line =
    "    role: \"Post entries with tool://ledger/post after checking tool://ledger/read.\"\n";
constexpr std::string_view clerk_identity_block =
    "  identity:\n    role: \"Post entries with tool://ledger/post after checking tool://ledger/read.\"\n"
    "    constraints:\n      - \"Never guess.\"\n      - \"Ask first.\"\n";
constexpr std::string_view clerk_models_block =
    "  models:\n    privileged:\n      provider: anthropic\n      model: claude\n      max_tokens: 4096\n";
constexpr std::string_view clerk_execution_block = "  execution:\n    kind: tool-calling\n    max_turns: 6\n";

// Replaces the one occurrence of `from`; a test whose edit missed would prove nothing.
std::string edit(std::string_view text, std::string_view from, std::string_view to) {
    std::string s(text);
    auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    REQUIRE(s.find(from, at + 1) == std::string::npos);
    s.replace(at, from.size(), to);
    return s;
}

manifest parsed(std::string_view yaml) {
    auto r = parse_manifest(yaml);
    if (!r) FAIL_CHECK(r.error().code << ": " << r.error().message);
    REQUIRE(r.has_value());
    return *r;
}

// Parsing must fail with `code`, and the message must name `field`.
// The error a manifest is refused with; the test fails when it parses.
error refusal_of(std::string_view yaml) {
    auto r = parse_manifest(yaml);
    REQUIRE_FALSE(r.has_value());
    return r.error();
}

// True when the manifest is refused with `code` and the message names `field`; on a mismatch the
// assertion that uses it reports what came back instead.
bool refused_with(std::string_view yaml, std::string_view code, std::string_view field) {
    auto r = parse_manifest(yaml);
    if (r.has_value()) {
        UNSCOPED_INFO("the manifest parsed");
        return false;
    }
    UNSCOPED_INFO("refused with " << r.error().code << ": " << r.error().message);
    return r.error().code == code && r.error().message.find(field) != std::string::npos;
}

std::string digest_of(std::string_view yaml) { return parsed(yaml).digest; }

}  // namespace

// ── what parses, and what it means ────────────────────────────────────────────────────────────

TEST_CASE("the seed's TELLER manifest parses unmodified") {
    auto m = parsed(teller_yaml);
    CHECK(m.api_version == "agentplane.hupe1980.github.io/v1alpha1");
    CHECK(m.name == "teller");
    CHECK(m.version == "1.0.0");
    REQUIRE(m.identity.has_value());
    CHECK(m.identity->role == "Answer questions about a ledger account.");
    CHECK(m.identity->constraints == std::vector<std::string>{"Use the tools. Do not guess a balance."});
    CHECK(m.provides == std::vector<std::string>{"ledger.ask"});
    REQUIRE(m.privileged_model.has_value());
    CHECK(m.privileged_model->provider == "fake");
    CHECK(m.privileged_model->model == "teller-1");
    CHECK_FALSE(m.privileged_model->max_tokens.has_value());
    CHECK(m.max_sensitivity_egress == sensitivity::internal);
    REQUIRE(m.execution.has_value());
    CHECK(m.execution->kind == execution_kind::tool_calling);
    CHECK(m.execution->max_turns == 4);
    CHECK(m.limits.max_tokens == std::uint64_t{100000});
    CHECK_FALSE(m.limits.max_steps.has_value());
    CHECK_FALSE(m.limits.max_effects.has_value());
    CHECK_FALSE(m.limits.max_wallclock_secs.has_value());
}

TEST_CASE("the TELLER grants say which tool mutates and which field a model may not choose") {
    auto m = parsed(teller_yaml);
    REQUIRE(m.tools.size() == 2);
    auto const& read = m.tools[0];
    CHECK(read.ref.uri() == "tool://ledger/read");
    CHECK_FALSE(read.mutates);
    CHECK(read.max_sensitivity == sensitivity::internal);
    CHECK(read.description == "Read a ledger account's balance.");
    CHECK(read.protected_fields.empty());
    auto const& post = m.tools[1];
    CHECK(post.ref.uri() == "tool://ledger/post");
    CHECK(post.mutates);
    CHECK_FALSE(post.requires_approval);
    CHECK_FALSE(post.idempotent);
    CHECK_FALSE(post.arguments.has_value());
    REQUIRE(post.protected_fields.size() == 1);
    CHECK(post.protected_fields[0].path == "/account");
    CHECK(post.protected_fields[0].require_trusted);
    CHECK(post.protected_fields[0].allowed_sources.empty());
    CHECK_FALSE(post.protected_fields[0].max_sensitivity.has_value());
}

TEST_CASE("an airlock/v1 manifest using every field parses") {
    auto m = parsed(clerk_yaml);
    CHECK(m.api_version == "airlock/v1");
    CHECK(m.identity->constraints == std::vector<std::string>{"Never guess.", "Ask first."});
    CHECK(m.privileged_model->max_tokens == std::uint64_t{4096});
    CHECK(m.max_sensitivity_egress == sensitivity::confidential);
    CHECK(m.limits.max_steps == std::uint64_t{20});
    CHECK(m.limits.max_effects == std::uint64_t{5});
    CHECK(m.limits.max_tokens == std::uint64_t{50000});
    CHECK(m.limits.max_wallclock_secs == std::uint64_t{120});
    CHECK(m.execution->max_turns == 6);
}

TEST_CASE("omitted grant fields take their documented defaults") {
    auto m = parsed(edit(clerk_yaml, "    kind: tool-calling\n    max_turns: 6\n", "    kind: tool-calling\n"));
    auto const& post = m.tools[1];
    CHECK(post.mutates);  // a tool nobody described as read-only is treated as one that changes things
    CHECK_FALSE(post.requires_approval);
    CHECK_FALSE(post.idempotent);
    CHECK_FALSE(post.max_sensitivity.has_value());
    CHECK(m.execution->max_turns == 8);
}

TEST_CASE("grant flags written in the manifest are read") {
    auto m = parsed(edit(clerk_yaml, "      description: Post an amount.\n",
                         "      description: Post an amount.\n      requires_approval: true\n      idempotent: true\n"
                         "      max_sensitivity: secret\n"));
    CHECK(m.tools[1].requires_approval);
    CHECK(m.tools[1].idempotent);
    CHECK(m.tools[1].max_sensitivity == sensitivity::secret);
}

TEST_CASE("every sensitivity name is accepted as a ceiling") {
    for (auto name : {"public", "internal", "confidential", "secret"}) {
        auto m = parsed(
            edit(clerk_yaml, "max_sensitivity_egress: confidential", std::string("max_sensitivity_egress: ") + name));
        CHECK(m.max_sensitivity_egress == parse_sensitivity(name));
    }
}

TEST_CASE("an empty budgets block means deliberately unbounded") {
    auto m = parsed(edit(teller_yaml, "  budgets:\n    max_tokens: 100000\n", "  budgets: {}\n"));
    CHECK_FALSE(m.limits.max_steps.has_value());
    CHECK_FALSE(m.limits.max_effects.has_value());
    CHECK_FALSE(m.limits.max_tokens.has_value());
    CHECK_FALSE(m.limits.max_wallclock_secs.has_value());
}

TEST_CASE("protected fields are sorted by path whatever order they were written in") {
    auto reordered = edit(clerk_yaml,
                          "        - path: /account\n          require_trusted: true\n"
                          "        - path: /memo\n          max_sensitivity: internal\n",
                          "        - path: /memo\n          max_sensitivity: internal\n"
                          "        - path: /account\n          require_trusted: true\n");
    auto m = parsed(reordered);
    REQUIRE(m.tools[1].protected_fields.size() == 2);
    CHECK(m.tools[1].protected_fields[0].path == "/account");
    CHECK(m.tools[1].protected_fields[1].path == "/memo");
    CHECK(m.digest == digest_of(clerk_yaml));
}

TEST_CASE("allowed sources are kept as a sorted list") {
    auto m = parsed(edit(clerk_yaml, "          require_trusted: true\n",
                         "          allowed_sources: [tool://crm/lookup, operator]\n"));
    CHECK(m.tools[1].protected_fields[0].allowed_sources == std::vector<std::string>{"operator", "tool://crm/lookup"});
}

TEST_CASE("grant_for finds a grant only by its exact tool id") {
    auto m = parsed(teller_yaml);
    auto const* post = m.grant_for(tool_id::parse("tool://ledger/post").value());
    REQUIRE(post != nullptr);
    CHECK(post == &m.tools[1]);
    CHECK(m.grant_for(tool_id::parse("tool://ledger/write").value()) == nullptr);
    CHECK(m.grant_for(tool_id::parse("tool://Ledger/post").value()) == nullptr);
    CHECK(m.grant_for(tool_id::parse("tool://ledger/post.v2").value()) == nullptr);
}

TEST_CASE("an arguments schema written in a grant is carried for the toolbox to refuse") {
    auto m = parsed(edit(clerk_yaml, "      description: Read a balance.\n",
                         "      description: Read a balance.\n"
                         "      arguments:\n        type: object\n        required: [account]\n"
                         "        properties: { account: { type: string, maxLength: 12 } }\n"));
    REQUIRE(m.tools[0].arguments.has_value());
    auto const& schema = m.tools[0].arguments->as_object();
    CHECK(schema.at("type") == "object");
    CHECK(schema.at("required").as_array().at(0) == "account");
    CHECK(schema.at("properties").at("account").at("maxLength") == 12);
    CHECK(m.digest != digest_of(clerk_yaml));
}

TEST_CASE("a granted tool:// reference ending a sentence is not mistaken for another tool") {
    // clerk's role ends with "tool://ledger/read." — the full stop is punctuation.
    auto m = parsed(clerk_yaml);
    CHECK_THAT(m.identity->role, Contains("tool://ledger/read."));
}

TEST_CASE("a completion agent is not held to the tool-calling rules") {
    auto yaml = edit(edit(clerk_yaml, "kind: tool-calling", "kind: completion"),
                     "      description: Post an amount.\n      protected_fields:\n"
                     "        - path: /account\n          require_trusted: true\n"
                     "        - path: /memo\n          max_sensitivity: internal\n",
                     "");
    auto m = parsed(yaml);
    CHECK(m.execution->kind == execution_kind::completion);
    CHECK(m.tools[1].mutates);
    CHECK(m.tools[1].description.empty());
}

TEST_CASE("a manifest without execution is a set of grants and needs no model") {
    auto yaml = edit(edit(clerk_yaml, clerk_execution_block, ""), clerk_models_block, "");
    auto m = parsed(yaml);
    CHECK_FALSE(m.execution.has_value());
    CHECK_FALSE(m.privileged_model.has_value());
}

// ── the digest ────────────────────────────────────────────────────────────────────────────────

TEST_CASE("the digest is SHA-256 of the canonical JSON of the normalized manifest") {
    auto m = parsed(teller_yaml);
    auto text = canonical(to_json(m));
    REQUIRE(text.has_value());
    CHECK(m.digest == sha256_hex(*text));
    CHECK(m.digest.size() == 64);
}

TEST_CASE("the digest does not depend on key order, comments or YAML style") {
    constexpr std::string_view rewritten = R"yaml(# reviewed copy: same agent, written differently
kind: Agent
spec:
  budgets: { max_tokens: 100000 }
  execution:
    max_turns: 4
    kind: tool-calling
  tools:
    - description: Read a ledger account's balance.
      max_sensitivity: internal
      mutates: false
      ref: tool://ledger/read
    - protected_fields:
        - require_trusted: true
          path: /account
      description: "Post an amount to an account."
      ref: tool://ledger/post   # the one that changes money
      max_sensitivity: internal
      mutates: true
  security: { max_sensitivity_egress: internal }
  models: { privileged: { model: teller-1, provider: fake } }
  capabilities:
    provides:
      - ledger.ask
  identity:
    constraints: 'Use the tools. Do not guess a balance.'
    role: Answer questions about a ledger account.
metadata:
  version: '1.0.0'
  name: teller
apiVersion: agentplane.hupe1980.github.io/v1alpha1
)yaml";
    CHECK(digest_of(rewritten) == digest_of(teller_yaml));
}

TEST_CASE("writing mutates: true and omitting it give the same digest") {
    auto without = edit(teller_yaml, "      mutates: true\n", "");
    CHECK(parsed(without).tools[1].mutates);
    CHECK(digest_of(without) == digest_of(teller_yaml));
}

TEST_CASE("writing other defaults out does not change the digest") {
    auto explicit_defaults = edit(teller_yaml, "      mutates: true\n",
                                  "      mutates: true\n      requires_approval: false\n      idempotent: false\n");
    CHECK(digest_of(explicit_defaults) == digest_of(teller_yaml));
    auto turns_written = edit(clerk_yaml, "    max_turns: 6\n", "    max_turns: 8\n");
    auto turns_omitted = edit(clerk_yaml, "    max_turns: 6\n", "");
    CHECK(digest_of(turns_written) == digest_of(turns_omitted));
}

TEST_CASE("one constraint written as a string or as a one-item list gives the same digest") {
    auto as_list = edit(teller_yaml, "constraints: \"Use the tools. Do not guess a balance.\"",
                        "constraints: [\"Use the tools. Do not guess a balance.\"]");
    CHECK(digest_of(as_list) == digest_of(teller_yaml));
}

TEST_CASE("changing max_turns changes the digest") {
    CHECK(digest_of(edit(teller_yaml, "max_turns: 4", "max_turns: 5")) != digest_of(teller_yaml));
}

TEST_CASE("changing what the model is told about a tool changes the digest") {
    auto changed = edit(teller_yaml, "description: Post an amount to an account.", "description: Post any amount.");
    CHECK(digest_of(changed) != digest_of(teller_yaml));
}

TEST_CASE("the order of grants is part of the digest") {
    auto read =
        std::string("    - ref: tool://ledger/read\n      mutates: false\n      description: Read a balance.\n");
    // Moves ledger/read from first to last place in spec.tools (execution follows tools in clerk).
    auto swapped = edit(edit(clerk_yaml, read, ""), "  execution:\n", read + "  execution:\n");
    auto m = parsed(swapped);
    REQUIRE(m.tools.size() == 2);
    CHECK(m.tools[0].ref.uri() == "tool://ledger/post");
    CHECK(m.digest != digest_of(clerk_yaml));
}

TEST_CASE("the normalized JSON writes every default and null for each absent optional") {
    auto j = to_json(parsed(teller_yaml));
    auto const& spec = j.at("spec");
    CHECK(j.at("apiVersion") == "agentplane.hupe1980.github.io/v1alpha1");
    CHECK(j.at("kind") == "Agent");
    CHECK(j.at("metadata").at("name") == "teller");
    CHECK(spec.at("identity").at("constraints").as_array().size() == 1);
    CHECK(spec.at("models").at("privileged").at("max_tokens").is_null());
    CHECK(spec.at("security").at("max_sensitivity_egress") == "internal");
    auto const& post = spec.at("tools").at(1);
    CHECK(post.at("ref") == "tool://ledger/post");
    CHECK(post.at("mutates") == true);
    CHECK(post.at("requires_approval") == false);
    CHECK(post.at("idempotent") == false);
    CHECK(post.at("arguments").is_null());
    auto const& account = post.at("protected_fields").at(0);
    CHECK(account.at("path") == "/account");
    CHECK(account.at("allowed_sources").as_array().empty());
    CHECK(account.at("max_sensitivity").is_null());
    CHECK(spec.at("execution").at("kind") == "tool-calling");
    CHECK(spec.at("execution").at("max_turns") == 4);
    CHECK(spec.at("budgets").at("max_tokens") == 100000);
    CHECK(spec.at("budgets").at("max_steps").is_null());
}

TEST_CASE("a manifest assembled in code serializes its protected fields sorted by path") {
    auto m = parsed(clerk_yaml);
    auto& fields = m.tools[1].protected_fields;
    std::swap(fields[0], fields[1]);
    REQUIRE(fields[0].path == "/memo");
    auto json_fields = to_json(m).at("spec").at("tools").at(1).at("protected_fields").as_array();
    REQUIRE(json_fields.size() == 2);
    CHECK(json_fields[0].at("path") == "/account");
    CHECK(json_fields[1].at("path") == "/memo");
    CHECK(sha256_hex(canonical(to_json(m)).value()) == parsed(clerk_yaml).digest);
}

TEST_CASE("the normalized JSON writes null for an absent identity and execution") {
    auto yaml =
        edit(edit(edit(clerk_yaml, clerk_execution_block, ""), clerk_identity_block, ""), clerk_models_block, "");
    auto j = to_json(parsed(yaml));
    CHECK(j.at("spec").at("identity").is_null());
    CHECK(j.at("spec").at("execution").is_null());
    CHECK(j.at("spec").at("models").at("privileged").is_null());
}

// ── refusals: document and metadata ───────────────────────────────────────────────────────────

TEST_CASE("a manifest with another apiVersion is refused") {
    for (auto other : {"apiVersion: airlock/v2", "apiVersion: agentplane.hupe1980.github.io/v1"}) {
        auto e = refusal_of(edit(clerk_yaml, "apiVersion: airlock/v1", other));
        CHECK(e.code == "unsupported_api_version");
        CHECK_THAT(e.message, Contains("apiVersion"));
    }
}

TEST_CASE("a manifest without apiVersion is refused") {
    auto e = refusal_of(edit(clerk_yaml, "apiVersion: airlock/v1\n", ""));
    CHECK(e.code == "missing_field");
    CHECK_THAT(e.message, Contains("apiVersion"));
}

TEST_CASE("a manifest of another kind is refused") {
    for (auto other : {"kind: Workflow", "kind: agent"}) {
        auto e = refusal_of(edit(clerk_yaml, "kind: Agent", other));
        CHECK(e.code == "unsupported_kind");
        CHECK_THAT(e.message, Contains("kind"));
    }
}

TEST_CASE("an empty metadata.name is refused") {
    for (auto blank : {"  name: \"\"", "  name: \"  \""}) {
        auto e = refusal_of(edit(clerk_yaml, "  name: clerk", blank));
        CHECK(e.code == "empty_field");
        CHECK_THAT(e.message, Contains("metadata.name"));
    }
}

TEST_CASE("an empty metadata.version is refused") {
    auto e = refusal_of(edit(clerk_yaml, "  version: \"2.1.0\"", "  version: ''"));
    CHECK(e.code == "empty_field");
    CHECK_THAT(e.message, Contains("metadata.version"));
}

TEST_CASE("a missing metadata.name is refused") {
    CHECK(refused_with(edit(clerk_yaml, "  name: clerk\n", ""), "missing_field", "metadata.name"));
}

TEST_CASE("text that is not YAML is refused with its line") {
    auto r = parse_manifest("apiVersion: airlock/v1\nkind: [Agent\n");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "invalid_yaml");
    CHECK_THAT(r.error().message, Contains("line"));
}

TEST_CASE("an empty text is refused") {
    CHECK(refused_with("", "invalid_yaml", "empty"));
    CHECK(refused_with("# nothing here\n", "invalid_yaml", "empty"));
}

TEST_CASE("two YAML documents in one manifest are refused") {
    CHECK(refused_with(std::string(clerk_yaml) + "---\n" + std::string(clerk_yaml), "invalid_yaml", "2 YAML documents"));
}

TEST_CASE("a manifest that is not a mapping is refused") {
    CHECK(refused_with("- apiVersion: airlock/v1\n", "wrong_type", "must be a mapping"));
}

TEST_CASE("a key written twice is refused, naming it") {
    CHECK(refused_with(edit(clerk_yaml, "      mutates: false\n", "      mutates: false\n      mutates: true\n"),
                    "duplicate_key", "spec.tools[0].mutates"));
    CHECK(refused_with(edit(clerk_yaml, "kind: Agent\n", "kind: Agent\nkind: Agent\n"), "duplicate_key", "kind"));
}

TEST_CASE("unknown keys anywhere are refused, naming the key path") {
    struct case_ {
        std::string_view from, to, path;
    };
    case_ const cases[] = {
        {"kind: Agent\n", "kind: Agent\nstatus: {}\n", "status"},
        {"  name: clerk\n", "  name: clerk\n  labels: {}\n", "metadata.labels"},
        {"  capabilities:\n", "  memory: {}\n  capabilities:\n", "spec.memory"},
        {"    role: \"Post", "    persona: x\n    role: \"Post", "spec.identity.persona"},
        {"    provides: [ledger.post]\n", "    provides: [ledger.post]\n    consumes: []\n",
         "spec.capabilities.consumes"},
        {"      model: claude\n", "      model: claude\n      temperature: 0.2\n",
         "spec.models.privileged.temperature"},
        {"    privileged:\n", "    quarantined: {}\n    privileged:\n", "spec.models.quarantined"},
        {"    max_sensitivity_egress: confidential\n", "    max_sensitivity_egress: confidential\n    egress: []\n",
         "spec.security.egress"},
        {"      description: Read a balance.\n", "      description: Read a balance.\n      timeout: 5\n",
         "spec.tools[0].timeout"},
        {"          require_trusted: true\n", "          require_trusted: true\n          requires_trusted: true\n",
         "spec.tools[1].protected_fields[0].requires_trusted"},
        {"    max_turns: 6\n", "    max_turns: 6\n    max_turn: 3\n", "spec.execution.max_turn"},
        {"    max_steps: 20\n", "    max_step: 20\n", "spec.budgets.max_step"},
    };
    for (auto const& c : cases) {
        INFO("adding " << c.path);
        CHECK(refused_with(edit(clerk_yaml, c.from, c.to), "unknown_key", c.path));
    }
}

TEST_CASE("an unknown key with unusual characters is quoted in its path") {
    CHECK(refused_with(edit(clerk_yaml, "kind: Agent\n", "kind: Agent\n\"x.y\": 1\n"), "unknown_key", "[\"x.y\"]"));
}

// ── refusals: wrong types ─────────────────────────────────────────────────────────────────────

TEST_CASE("a boolean field written as anything but true or false is refused") {
    CHECK(refused_with(edit(clerk_yaml, "mutates: false", "mutates: \"false\""), "wrong_type", "spec.tools[0].mutates"));
    // YAML 1.1's `no` is the string "no" to a YAML 1.2 reader: two readers, two meanings.
    CHECK(refused_with(edit(clerk_yaml, "mutates: false", "mutates: no"), "wrong_type", "spec.tools[0].mutates"));
    CHECK(refused_with(edit(clerk_yaml, "require_trusted: true", "require_trusted: 1"), "wrong_type",
                    "spec.tools[1].protected_fields[0].require_trusted"));
}

TEST_CASE("an integer field written as text or a fraction is refused") {
    CHECK(refused_with(edit(clerk_yaml, "max_turns: 6", "max_turns: \"6\""), "wrong_type", "spec.execution.max_turns"));
    CHECK(refused_with(edit(clerk_yaml, "max_turns: 6", "max_turns: 6.5"), "wrong_type", "spec.execution.max_turns"));
    CHECK(refused_with(edit(clerk_yaml, "max_steps: 20", "max_steps: twenty"), "wrong_type", "spec.budgets.max_steps"));
    CHECK(refused_with(edit(clerk_yaml, "max_tokens: 4096", "max_tokens: 1e4"), "wrong_type",
                    "spec.models.privileged.max_tokens"));
}

TEST_CASE("a negative or oversized count is refused") {
    CHECK(refused_with(edit(clerk_yaml, "max_effects: 5", "max_effects: -5"), "invalid_value", "spec.budgets.max_effects"));
    CHECK(refused_with(edit(clerk_yaml, "max_effects: 5", "max_effects: 18446744073709551616"), "invalid_value",
                    "spec.budgets.max_effects"));
    CHECK(refused_with(edit(clerk_yaml, "max_turns: 6", "max_turns: 4294967296"), "invalid_value",
                    "spec.execution.max_turns"));
}

TEST_CASE("a string field written as a number, boolean or null is refused") {
    CHECK(refused_with(edit(clerk_yaml, "  name: clerk", "  name: 42"), "wrong_type", "metadata.name"));
    // Unquoted, 2.10 is the number 2.1 to other YAML readers.
    CHECK(refused_with(edit(clerk_yaml, "  version: \"2.1.0\"", "  version: 2.10"), "wrong_type", "metadata.version"));
    CHECK(refused_with(edit(clerk_yaml, "description: Read a balance.", "description: true"), "wrong_type",
                    "spec.tools[0].description"));
    CHECK(refused_with(edit(clerk_yaml, "provider: anthropic", "provider: ~"), "wrong_type",
                    "spec.models.privileged.provider"));
}

TEST_CASE("a sequence written as a single value is refused") {
    CHECK(refused_with(edit(clerk_yaml, "provides: [ledger.post]", "provides: ledger.post"), "wrong_type",
                    "spec.capabilities.provides"));
    CHECK(refused_with(edit(clerk_yaml, "          require_trusted: true\n", "          allowed_sources: operator\n"),
                    "wrong_type", "spec.tools[1].protected_fields[0].allowed_sources"));
}

TEST_CASE("a section written as a scalar or null is refused") {
    CHECK(refused_with(edit(clerk_yaml, "  security:\n    max_sensitivity_egress: confidential\n", "  security:\n"),
                    "wrong_type", "spec.security"));
    CHECK(refused_with(edit(clerk_yaml, clerk_identity_block, "  identity: a clerk\n"), "wrong_type", "spec.identity"));
}

TEST_CASE("an unknown sensitivity name is refused, naming the field") {
    CHECK(refused_with(edit(clerk_yaml, "max_sensitivity_egress: confidential", "max_sensitivity_egress: Confidential"),
                    "invalid_value", "spec.security.max_sensitivity_egress"));
    CHECK(refused_with(edit(clerk_yaml, "max_sensitivity: internal", "max_sensitivity: restricted"), "invalid_value",
                    "spec.tools[1].protected_fields[1].max_sensitivity"));
}

TEST_CASE("an unknown execution kind is refused") {
    CHECK(refused_with(edit(clerk_yaml, "kind: tool-calling", "kind: tool_calling"), "invalid_value",
                    "spec.execution.kind"));
}

TEST_CASE("an execution block without a kind is refused") {
    CHECK(refused_with(edit(clerk_yaml, "    kind: tool-calling\n", ""), "missing_field", "spec.execution.kind"));
}

TEST_CASE("an explicit YAML tag other than !!str is refused") {
    CHECK(refused_with(edit(clerk_yaml, "  name: clerk", "  name: !secret clerk"), "wrong_type", "metadata.name"));
    CHECK(parsed(edit(clerk_yaml, "  name: clerk", "  name: !!str clerk")).name == "clerk");
}

// ── refusals: identity, models, budgets ───────────────────────────────────────────────────────

TEST_CASE("a blank identity.role is refused when identity is present") {
    CHECK(refused_with(edit(clerk_yaml, clerk_role_line, "    role: \" \"\n"), "empty_field", "spec.identity.role"));
}

TEST_CASE("an identity without a role is refused") {
    CHECK(refused_with(edit(clerk_yaml, clerk_role_line, ""), "empty_field", "spec.identity.role"));
}

TEST_CASE("a privileged model without a provider is refused") {
    CHECK(refused_with(edit(clerk_yaml, "      provider: anthropic\n", ""), "missing_field",
                    "spec.models.privileged.provider"));
}

TEST_CASE("a budget ceiling of 0 is refused, naming the budget") {
    for (auto key : {"max_steps: 20", "max_effects: 5", "max_tokens: 50000", "max_wallclock_secs: 120"}) {
        std::string_view k(key);
        auto name = std::string(k.substr(0, k.find(':')));
        INFO(name);
        CHECK(refused_with(edit(clerk_yaml, "    " + std::string(k) + "\n", "    " + name + ": 0\n"), "zero_budget",
                        "spec.budgets." + name));
    }
}

TEST_CASE("a missing budgets block is refused") {
    CHECK(refused_with(edit(teller_yaml, "  budgets:\n    max_tokens: 100000\n", ""), "missing_field", "spec.budgets"));
}

TEST_CASE("an empty budgets key is refused rather than read as unbounded") {
    CHECK(refused_with(edit(teller_yaml, "  budgets:\n    max_tokens: 100000\n", "  budgets:\n"), "wrong_type",
                    "spec.budgets"));
}

TEST_CASE("max_turns of 0 is refused") {
    CHECK(refused_with(edit(clerk_yaml, "max_turns: 6", "max_turns: 0"), "zero_limit", "spec.execution.max_turns"));
}

TEST_CASE("a model max_tokens of 0 is refused") {
    CHECK(refused_with(edit(clerk_yaml, "max_tokens: 4096", "max_tokens: 0"), "zero_limit",
                    "spec.models.privileged.max_tokens"));
}

TEST_CASE("a capability listed twice is refused") {
    CHECK(refused_with(edit(clerk_yaml, "provides: [ledger.post]", "provides: [ledger.post, ledger.post]"),
                    "duplicate_entry", "spec.capabilities.provides[1]"));
}

// ── refusals: grants ──────────────────────────────────────────────────────────────────────────

TEST_CASE("a grant ref that is not exactly tool://server/name is refused") {
    for (auto bad : {"ledger/read", "Tool://ledger/read", "tool://ledger", "tool://ledger/read/x",
                     "tool://led-ger/read", "\"tool://ledger/read \"", "tool:///read", "https://ledger/read"}) {
        INFO(bad);
        CHECK(refused_with(edit(clerk_yaml, "ref: tool://ledger/post", std::string("ref: ") + bad), "invalid_tool_ref",
                        "spec.tools[1].ref"));
    }
}

// Each spelling a ref copied from elsewhere can carry, with the ref that works: '-' (a wire name's
// '.', and many upstreams' own names), "__" inside a name (another gateway's server__tool), and a
// whole wire name server__name with or without the scheme.
TEST_CASE("a grant ref in a wire or upstream spelling is refused with the spelling that works") {
    struct spelling {
        char const* written;
        char const* works;
    };
    for (auto [written, works] : {spelling{"tool://ledger/list-directory", "tool://ledger/list.directory"},
                                  spelling{"tool://ledger/get-tiny-image", "tool://ledger/get.tiny.image"},
                                  spelling{"tool://my-ledger/post", "tool://my.ledger/post"},
                                  spelling{"tool://inner/everything__echo", "tool://inner/everything_.echo"},
                                  spelling{"tool://inner/everything__get-sum", "tool://inner/everything_.get.sum"},
                                  spelling{"ledger__list-directory", "tool://ledger/list.directory"},
                                  spelling{"tool://ledger__list-directory", "tool://ledger/list.directory"},
                                  spelling{"ledger__post", "tool://ledger/post"},
                                  spelling{"my-ledger__post", "tool://my.ledger/post"}}) {
        INFO(written);
        auto r = parse_manifest(edit(clerk_yaml, "ref: tool://ledger/post", std::string("ref: ") + written));
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().code == "invalid_tool_ref");
        CHECK(r.error().message == std::string("spec.tools[1].ref \"") + written +
                                       "\" is the wire spelling of a tool, which a ref cannot hold (a ref writes '-' "
                                       "as '.', \"__\" as \"_.\" and tool://server/name); write " + works);
        // The spelling it names is one the parser accepts.
        auto const unnamed = edit(clerk_yaml, clerk_role_line, "    role: \"Post entries.\"\n");
        auto fixed = parse_manifest(edit(unnamed, "ref: tool://ledger/post", std::string("ref: ") + works));
        if (!fixed) FAIL_CHECK(fixed.error().message);
    }
}

TEST_CASE("a malformed ref that no respelling fixes gets the grammar, not a guess") {
    for (auto bad : {"ledger/read", "tool://ledger", "tool://led ger/read", "tool://ledger/read!", "ledger__"}) {
        INFO(bad);
        auto r = parse_manifest(edit(clerk_yaml, "ref: tool://ledger/post", std::string("ref: ") + bad));
        REQUIRE_FALSE(r.has_value());
        CHECK_THAT(r.error().message, Contains("is not an exact tool://server/name"));
        CHECK_THAT(r.error().message, !Contains("write tool://"));
    }
}

TEST_CASE("a grant without a ref is refused") {
    CHECK(refused_with(edit(clerk_yaml, "    - ref: tool://ledger/read\n      mutates: false\n", "    - mutates: false\n"),
                    "missing_field", "spec.tools[0].ref"));
}

TEST_CASE("the same tool granted twice is refused, naming both grants") {
    auto twice = edit(clerk_yaml, "  execution:\n",
                      "    - ref: tool://ledger/read\n      mutates: false\n      description: Again.\n  execution:\n");
    auto r = parse_manifest(twice);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "duplicate_grant");
    CHECK_THAT(r.error().message, Contains("spec.tools[2].ref"));
    CHECK_THAT(r.error().message, Contains("spec.tools[0]"));
}

TEST_CASE("a protected-field path that is not an RFC 6901 pointer is refused") {
    CHECK(refused_with(edit(clerk_yaml, "path: /account", "path: account"), "invalid_pointer",
                    "spec.tools[1].protected_fields[0].path"));
    CHECK(refused_with(edit(clerk_yaml, "path: /account", "path: /acc~2ount"), "invalid_pointer",
                    "spec.tools[1].protected_fields[0].path"));
    CHECK(refused_with(edit(clerk_yaml, "path: /account", "path: \"#/account\""), "invalid_pointer",
                    "spec.tools[1].protected_fields[0].path"));
}

TEST_CASE("a protected field with require_trusted and allowed_sources together is refused") {
    CHECK(refused_with(edit(clerk_yaml, "          require_trusted: true\n",
                         "          require_trusted: true\n          allowed_sources: [operator]\n"),
                    "conflicting_constraints", "spec.tools[1].protected_fields[0]"));
}

TEST_CASE("require_trusted: false beside allowed_sources is not a conflict") {
    auto m = parsed(edit(clerk_yaml, "          require_trusted: true\n",
                         "          require_trusted: false\n          allowed_sources: [operator]\n"));
    CHECK(m.tools[1].protected_fields[0].allowed_sources == std::vector<std::string>{"operator"});
}

TEST_CASE("a protected field with no constraint is refused") {
    CHECK(refused_with(
        edit(clerk_yaml, "        - path: /memo\n          max_sensitivity: internal\n", "        - path: /memo\n"),
        "unconstrained_field", "spec.tools[1].protected_fields[1]"));
    CHECK(refused_with(edit(clerk_yaml, "          require_trusted: true\n", "          require_trusted: false\n"),
                    "unconstrained_field", "spec.tools[1].protected_fields[0]"));
}

TEST_CASE("an empty allowed_sources list is refused because nothing could satisfy it") {
    CHECK(refused_with(edit(clerk_yaml, "          require_trusted: true\n", "          allowed_sources: []\n"),
                    "empty_field", "spec.tools[1].protected_fields[0].allowed_sources"));
}

TEST_CASE("a protected path declared twice on one grant is refused") {
    auto r = parse_manifest(edit(clerk_yaml, "path: /memo", "path: /account"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "duplicate_protected_path");
    CHECK_THAT(r.error().message, Contains("spec.tools[1].protected_fields[1].path"));
    CHECK_THAT(r.error().message, Contains("spec.tools[1].protected_fields[0]"));
}

TEST_CASE("a tool-calling agent's grant without a description is refused") {
    CHECK(refused_with(edit(clerk_yaml, "      description: Read a balance.\n", ""), "missing_description",
                    "spec.tools[0].description"));
    CHECK(refused_with(edit(clerk_yaml, "description: Read a balance.", "description: \"  \""), "missing_description",
                    "spec.tools[0].description"));
}

TEST_CASE("a tool-calling agent's mutating grant without protected fields is refused as unreachable") {
    auto yaml = edit(clerk_yaml,
                     "      protected_fields:\n        - path: /account\n          require_trusted: true\n"
                     "        - path: /memo\n          max_sensitivity: internal\n",
                     "");
    auto r = parse_manifest(yaml);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "unreachable_grant");
    CHECK_THAT(r.error().message, Contains("spec.tools[1].protected_fields"));
    CHECK_THAT(r.error().message, Contains("taint gate would refuse every call"));
}

TEST_CASE("a tool-calling agent's read-only grant needs no protected fields") {
    auto m = parsed(clerk_yaml);
    CHECK_FALSE(m.tools[0].mutates);
    CHECK(m.tools[0].protected_fields.empty());
}

TEST_CASE("a tool-calling agent's mutating grant protected only by sensitivity ceilings is refused") {
    auto yaml = edit(clerk_yaml, "        - path: /account\n          require_trusted: true\n", "");
    auto r = parse_manifest(yaml);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "ungated_grant");
    CHECK_THAT(r.error().message, Contains("spec.tools[1].protected_fields"));
    CHECK_THAT(r.error().message, Contains("taint gate"));
}

TEST_CASE("a mutating grant gated by allowed_sources satisfies the tool-calling rule") {
    auto m = parsed(edit(clerk_yaml, "          require_trusted: true\n", "          allowed_sources: [operator]\n"));
    CHECK(m.tools[1].mutates);
}

TEST_CASE("execution without a privileged model is refused") {
    CHECK(refused_with(edit(clerk_yaml, clerk_models_block, "  models: {}\n"), "execution_without_model",
                    "spec.models.privileged"));
    CHECK(refused_with(edit(clerk_yaml, clerk_models_block, ""), "execution_without_model", "spec.models.privileged"));
}

TEST_CASE("execution without a capability is refused") {
    CHECK(refused_with(edit(clerk_yaml, "provides: [ledger.post]", "provides: []"), "execution_without_capability",
                    "spec.capabilities.provides"));
    CHECK(refused_with(edit(clerk_yaml, "  capabilities:\n    provides: [ledger.post]\n", ""),
                    "execution_without_capability", "spec.capabilities.provides"));
}

TEST_CASE("a tool:// reference in the role that is not granted is refused") {
    CHECK(refused_with(edit(clerk_yaml, "after checking tool://ledger/read.", "after checking tool://ledger/balance."),
                    "ungranted_tool_reference", "spec.identity.role"));
}

TEST_CASE("a near miss of a granted tool in the role is refused, quoting the mention") {
    auto r = parse_manifest(edit(clerk_yaml, "with tool://ledger/post after", "with tool://ledger/posts after"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "ungranted_tool_reference");
    CHECK_THAT(r.error().message, Contains("tool://ledger/posts"));
}

TEST_CASE("a tool:// reference in the constraints that is not granted is refused") {
    CHECK(refused_with(edit(clerk_yaml, "      - \"Ask first.\"", "      - \"Ask tool://people/ask first.\""),
                    "ungranted_tool_reference", "spec.identity.constraints[1]"));
    CHECK(refused_with(edit(teller_yaml, "Use the tools.", "Use tool://ledger/write."), "ungranted_tool_reference",
                    "spec.identity.constraints"));
}

// ── arguments and limits ──────────────────────────────────────────────────────────────────────

TEST_CASE("an arguments schema that expands without bound through aliases is refused") {
    auto bomb = std::string(
        "      arguments:\n"
        "        a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        "        b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
        "        d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
        "        f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n");
    CHECK(refused_with(
        edit(clerk_yaml, "      description: Read a balance.\n", "      description: Read a balance.\n" + bomb),
        "too_large", "spec.tools[0].arguments"));
}

// ── every problem at once ─────────────────────────────────────────────────────────────────────

TEST_CASE("manifest_problems lists every problem at once, the first being parse_manifest's") {
    auto yaml = edit(edit(edit(clerk_yaml, "  name: clerk", "  name: \"\""), "max_turns: 6", "max_turns: 0"),
                     "path: /account", "path: account");
    auto problems = manifest_problems(yaml);
    REQUIRE(problems.size() == 3);
    CHECK(problems[0].code == "empty_field");
    CHECK_THAT(problems[0].message, Contains("metadata.name"));
    CHECK(problems[1].code == "invalid_pointer");
    CHECK(problems[2].code == "zero_limit");
    auto r = parse_manifest(yaml);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == problems[0]);
}

TEST_CASE("manifest_problems is empty for a manifest that parses") {
    CHECK(manifest_problems(teller_yaml).empty());
    CHECK(manifest_problems(clerk_yaml).empty());
}

// ── journal privacy ───────────────────────────────────────────────────────────────────────────

namespace {
// A gateway principal's manifest: no model, no execution.
constexpr std::string_view desk_yaml = R"yaml(apiVersion: airlock/v1
kind: Agent
metadata: { name: desk, version: "1" }
spec:
  tools:
    - ref: tool://fs/read
      mutates: false
    - ref: tool://fs/write
  budgets: {}
)yaml";
}  // namespace

TEST_CASE("journal: a grant keeps full values by default, or says hash or omit; spec.security.journal is each grant's default") {
    auto plain = parsed(desk_yaml);
    CHECK(plain.tools[0].journal == journal_keep::full);
    CHECK(plain.tools[1].journal == journal_keep::full);

    auto one = parsed(edit(desk_yaml, "      mutates: false\n", "      mutates: false\n      journal: hash\n"));
    CHECK(one.tools[0].journal == journal_keep::hash);
    CHECK(one.tools[1].journal == journal_keep::full);

    auto all = parsed(edit(edit(desk_yaml, "spec:\n", "spec:\n  security: { journal: omit }\n"), "      mutates: false\n",
                           "      mutates: false\n      journal: full\n"));
    CHECK(all.tools[0].journal == journal_keep::full);  // the grant's own word wins
    CHECK(all.tools[1].journal == journal_keep::omit);
}

TEST_CASE("journal: the digest covers it, and a manifest that does not use it keeps the digest it had") {
    auto const plain = digest_of(desk_yaml);
    auto const spelled_full = digest_of(edit(desk_yaml, "      mutates: false\n", "      mutates: false\n      journal: full\n"));
    CHECK(spelled_full == plain);
    auto const hashed = digest_of(edit(desk_yaml, "      mutates: false\n", "      mutates: false\n      journal: hash\n"));
    CHECK(hashed != plain);
    // The same meaning written through the spec-wide default digests the same.
    auto const by_default = digest_of(edit(edit(desk_yaml, "spec:\n", "spec:\n  security: { journal: hash }\n"),
                                           "    - ref: tool://fs/write\n", "    - ref: tool://fs/write\n      journal: full\n"));
    CHECK(by_default == hashed);
    // Manifests written before journal privacy existed keep their digests (the seed's TELLER).
    CHECK(to_json(parsed(desk_yaml)).at("spec").at("tools").at(0).as_object().if_contains("journal") == nullptr);
}

TEST_CASE("journal: a value that is not full, hash or omit is refused naming the field; an agent's grants stay full") {
    CHECK(refused_with(edit(desk_yaml, "      mutates: false\n", "      mutates: false\n      journal: sha256\n"),
                       "invalid_value", "spec.tools[0].journal is \"sha256\"; it must be full, hash or omit"));
    CHECK(refused_with(edit(desk_yaml, "spec:\n", "spec:\n  security: { journal: none }\n"), "invalid_value",
                       "spec.security.journal"));
    // clerk_yaml runs as an agent (a model, tool-calling): replay needs the values.
    auto agent = edit(clerk_yaml, "      description: Post an amount.\n", "      description: Post an amount.\n      journal: hash\n");
    auto e = refusal_of(agent);
    CHECK(e.code == "invalid_value");
    CHECK_THAT(e.message, Catch::Contains("spec.tools[1].journal is hash, but this manifest is an agent's"));
}

// Found by the manifest_yaml fuzz target: yaml-cpp never returned on this text, so parsing it (and
// `airlock check` on such a file) hung. YAML does not allow NUL; the manifest reader now says so.
TEST_CASE("a manifest holding a NUL byte is refused as invalid YAML naming where the NUL is") {
    auto r = parse_manifest(std::string_view(",i~\0\0\0" "3", 7));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == "invalid_yaml");
    CHECK(r.error().message == "the manifest holds a NUL byte at byte 3, which YAML does not allow");
}

// Found by the manifest_yaml fuzz target: on a stray ',' yaml-cpp 0.7's LoadAll never returns (it
// collects empty documents until memory runs out), so `airlock check` on such a file hung.
TEST_CASE("a manifest yaml-cpp reads as endless empty documents is refused at once") {
    for (auto text : {",", ", a", "\"a\",", "# The grants\n  ,    deskind: Agent\nkind: Agent\n"}) {
        INFO(text);
        auto r = parse_manifest(text);
        REQUIRE_FALSE(r.has_value());
        // Read as null (not a mapping), or as a value followed by an empty document.
        CHECK((r.error().code == "wrong_type" || r.error().code == "invalid_yaml"));
    }
    CHECK(refused_with(std::string(clerk_yaml) + "---\n,", "invalid_yaml", "2 YAML documents"));
}
