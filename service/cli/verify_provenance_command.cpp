#include "service/cli/verify_provenance_command.hpp"

#include "core/canonical_json.hpp"
#include "core/provenance.hpp"
#include "core/sha256.hpp"
#include "core/tool_id.hpp"
#include "mcp/client/client.hpp"
#include "service/cli/keygen_command.hpp"
#include "core/rfc3339.hpp"

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace airlock::service {

namespace {

constexpr char verify_provenance_usage[] =
    "usage: airlock verify-provenance --key PUB.pem [--kid KID] [--at TIME] [--tool URI] [--arguments JSON] FILE|-\n"
    "  verifies the signed provenance of one tool call and prints 'ok' or why not:\n"
    "  unsigned, unknown_key, bad_signature, tool_mismatch, arguments_mismatch, not_yet_valid, expired.\n"
    "  FILE (or - for stdin) holds one JSON document, any of:\n"
    "    tools/call params          {name, arguments, _meta: {\"dev.airlock/provenance\": {...}}}\n"
    "    a JSON-RPC request         {jsonrpc, id, method: \"tools/call\", params: {...}}\n"
    "    a journal record or body   {kind, body: {tool, arguments, provenance}} or {tool, arguments, provenance}\n"
    "    a _meta object or a block  (then --arguments is needed)\n"
    "  --key PUB.pem     the signer's public key (provenance.pub from airlock keygen)\n"
    "  --kid KID         the key id it signs under (default: derived from the key, as keygen does)\n"
    "  --at TIME         check validity at this RFC 3339 time instead of now\n"
    "  --tool URI        the tool://server/name the call must be for (default: the record's tool,\n"
    "                    else the block's own, checked against params.name when present)\n"
    "  --arguments JSON  the call's arguments, replacing any in the input\n"
    "  exit: 0 ok, 1 any other verdict, 2 unreadable input or no well-formed block\n";

// What the input says about the call the block claims to cover.
struct call_under_check {
    std::optional<core::provenance> block;
    std::optional<boost::json::value> arguments;
    std::optional<std::string> tool;         // a journal record's tool://server/name
    std::optional<std::string> called_name;  // params.name: the upstream's name or airlock's wire name
};

core::result<call_under_check> from_params(boost::json::object const& params) {
    call_under_check c;
    auto block = core::provenance_from_params(params);
    if (!block) return block.error();
    c.block = std::move(*block);
    // Absent arguments read as {}, as verify_call_params and MCP servers read them.
    auto const* args = params.if_contains("arguments");
    c.arguments = args ? *args : boost::json::value(boost::json::object{});
    if (auto const* name = params.if_contains("name")) {
        if (!name->is_string()) return core::make_error("wrong_type", "params.name must be a string");
        c.called_name = std::string(name->get_string());
    }
    return c;
}

core::result<call_under_check> from_record_body(boost::json::object const& body) {
    call_under_check c;
    if (auto const* p = body.if_contains("provenance"); p && !p->is_null()) {
        auto block = core::provenance_from_json(*p);
        if (!block) return core::make_error(block.error().code, "provenance: " + block.error().message);
        c.block = std::move(*block);
    }
    if (auto const* args = body.if_contains("arguments")) c.arguments = *args;
    if (auto const* tool = body.if_contains("tool")) {
        if (!tool->is_string()) return core::make_error("wrong_type", "the record's tool must be a string");
        c.tool = std::string(tool->get_string());
    }
    return c;
}

core::result<call_under_check> from_block(boost::json::value const& v) {
    auto block = core::provenance_from_json(v);
    if (!block) return block.error();
    call_under_check c;
    c.block = std::move(*block);
    return c;
}

// Accepts every shape a block is found in, told apart by the members each one must have.
core::result<call_under_check> locate(boost::json::value const& doc) {
    if (!doc.is_object()) return core::make_error("wrong_type", "the input must be a JSON object");
    auto const& o = doc.get_object();
    if (o.contains("jsonrpc") || o.contains("method")) {
        auto const* method = o.if_contains("method");
        if (!method || !method->is_string() || method->get_string() != "tools/call")
            return core::make_error("wrong_method", "a JSON-RPC request must be a tools/call");
        auto const* params = o.if_contains("params");
        if (!params || !params->is_object())
            return core::make_error("wrong_type", "the tools/call request has no params object");
        return from_params(params->get_object());
    }
    if (auto const* body = o.if_contains("body"); body && o.contains("kind")) {
        if (!body->is_object()) return core::make_error("wrong_type", "the journal record's body must be an object");
        return from_record_body(body->get_object());
    }
    if (o.contains("provenance")) return from_record_body(o);
    if (o.contains("_meta") || o.contains("arguments") || o.contains("name")) return from_params(o);
    if (auto const* block = o.if_contains(core::provenance_meta_key)) return from_block(*block);
    if (o.contains("args_sha256")) return from_block(doc);
    return core::make_error("no_block",
                            "no provenance block found: expected tools/call params, a tools/call request, a journal "
                            "record carrying provenance, a _meta object or a provenance block");
}

std::string format_time(std::chrono::sys_seconds t) {
    using namespace std::chrono;
    auto const day = floor<days>(t);
    year_month_day const ymd{day};
    hh_mm_ss const hms{t - day};
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                  static_cast<int>(hms.seconds().count()));
    return buf;
}

core::result<std::string> read_all(std::string const& path) {
    std::ostringstream text;
    if (path == "-") {
        text << std::cin.rdbuf();
        return text.str();
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return core::make_error("io", "cannot read '" + path + "'");
    text << in.rdbuf();
    return text.str();
}

// params.name is the upstream's own name for the tool when airlock sent the call ('-' reads as
// '.'), or airlock's wire name server__name when it is the call a host made to airlock.
bool names_tool(std::string const& called, core::tool_id const& tool) {
    if (auto n = mcp::airlock_tool_name(called); n && *n == tool.name()) return true;
    if (auto w = core::tool_id::from_wire_name(called); w && *w == tool) return true;
    return false;
}

// Verdicts reached only after the tool binding was checked: a name mismatch outranks them.
bool past_tool_check(core::provenance_verdict v) {
    using enum core::provenance_verdict;
    return v == ok || v == arguments_mismatch || v == not_yet_valid || v == expired;
}

std::string explain(core::provenance_verdict v, core::provenance const& p, std::string const& trusted_kid,
                    std::string const& expected_tool, boost::json::value const& arguments,
                    std::chrono::sys_seconds now) {
    using enum core::provenance_verdict;
    switch (v) {
        case ok: return {};
        case unsigned_: return "the block carries no attestation";
        case unknown_key:
            return "signed under key id \"" + p.attestation->kid + "\" (" + p.attestation->alg +
                   "), but only \"" + trusted_kid + "\" (Ed25519) is trusted";
        case bad_signature: return "the signature does not verify under key \"" + trusted_kid + "\"";
        case tool_mismatch: return "the block is for " + p.tool + ", the call is to " + expected_tool;
        case arguments_mismatch: {
            auto text = core::canonical(arguments);
            return "the block covers arguments with SHA-256 " + p.args_sha256 + ", these hash to " +
                   (text ? core::sha256_hex(*text) : "nothing (" + text.error().message + ")");
        }
        case not_yet_valid: return "issued at " + format_time(p.issued_at) + ", checked at " + format_time(now);
        case expired: return "expired at " + format_time(p.expires_at) + ", checked at " + format_time(now);
    }
    return {};
}

int input_error(std::string const& message) {
    std::cerr << "airlock verify-provenance: " << message << "\n";
    return 2;
}

struct verify_args {
    std::optional<std::string> key_path, kid, at, tool_uri, arguments_text, input;
};

// The command line; nullopt to go on, else the exit code (after printing usage or the problem).
std::optional<int> parse_verify_args(std::vector<std::string> const& args, verify_args& out) {
    auto& [key_path, kid, at, tool_uri, arguments_text, input] = out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << verify_provenance_usage;
            return 0;
        }
        std::optional<std::string>* option = a == "--key"         ? &key_path
                                             : a == "--kid"       ? &kid
                                             : a == "--at"        ? &at
                                             : a == "--tool"      ? &tool_uri
                                             : a == "--arguments" ? &arguments_text
                                                                  : nullptr;
        if (option && i + 1 < args.size()) {
            *option = args[++i];
        } else if (!option && !input && (a == "-" || !a.starts_with("-"))) {
            input = a;
        } else {
            std::cerr << "airlock verify-provenance: unexpected argument '" << a << "'\n" << verify_provenance_usage;
            return 2;
        }
    }
    if (!key_path || !input) {
        std::cerr << "airlock verify-provenance: --key and an input FILE (or -) are required\n" << verify_provenance_usage;
        return 2;
    }
    return std::nullopt;
}

}  // namespace

int run_verify_provenance(std::vector<std::string> const& args) {
    verify_args parsed;
    if (auto exit = parse_verify_args(args, parsed)) return *exit;
    auto& [key_path, kid, at, tool_uri, arguments_text, input] = parsed;

    auto pem = read_all(*key_path);
    if (!pem) return input_error("--key: " + pem.error().message);
    if (!kid) {
        auto derived = derived_key_id_of_pem(*pem);
        if (!derived) return input_error("--key " + *key_path + ": " + derived.error().message);
        kid = *derived;
    }
    core::provenance_verifier verifier;
    if (auto r = verifier.trust_pem(*kid, *pem); !r) return input_error("--key " + *key_path + ": " + r.error().message);

    auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    if (at) {
        auto t = core::parse_rfc3339(*at);
        if (!t) return input_error("--at must be an RFC 3339 time like 2026-11-30T08:00:00Z, got '" + *at + "'");
        now = *t;
    }

    auto text = read_all(*input);
    if (!text) return input_error(text.error().message);
    auto doc = core::parse_ijson(*text);
    if (!doc) return input_error((*input == "-" ? std::string("stdin") : *input) + ": " + doc.error().message);
    auto call = locate(*doc);
    if (!call) return input_error(call.error().message);
    if (!call->block) {
        std::cerr << "airlock verify-provenance: the call carries no provenance block\n";
        std::cout << core::to_string(core::provenance_verdict::unsigned_) << "\n";
        return 1;
    }
    auto const& block = *call->block;

    if (arguments_text) {
        auto parsed = core::parse_ijson(*arguments_text);
        if (!parsed) return input_error("--arguments: " + parsed.error().message);
        call->arguments = std::move(*parsed);
    }
    if (!call->arguments)
        return input_error("the input carries no arguments to check the block against; pass --arguments JSON");

    std::string const expected = tool_uri ? *tool_uri : call->tool ? *call->tool : block.tool;
    auto tool = core::tool_id::parse(expected);
    if (!tool)
        return input_error((tool_uri ? "--tool: " : call->tool ? "the record's tool: " : "the block's tool: ") +
                           tool.error().message);

    auto verdict = verifier.verify(block, *tool, *call->arguments, now);
    std::string detail = explain(verdict, block, *kid, expected, *call->arguments, now);
    if (past_tool_check(verdict) && call->called_name && !names_tool(*call->called_name, *tool)) {
        detail = "the block is for " + block.tool + ", the call names the tool '" + *call->called_name + "'";
        verdict = core::provenance_verdict::tool_mismatch;
    }
    if (!detail.empty()) std::cerr << "airlock verify-provenance: " << detail << "\n";
    std::cout << core::to_string(verdict) << "\n";
    return verdict == core::provenance_verdict::ok ? 0 : 1;
}

}  // namespace airlock::service
