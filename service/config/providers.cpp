#include "service/config/sections.hpp"

#include "service/config/reader.hpp"
#include "core/tool_id.hpp"
#include "mcp/client/http_transport.hpp"

namespace airlock::service::config_detail {

namespace {

// Where each kind is reached when base_url is not set: the vendor's public API.
std::string default_base_url(provider_kind k) {
    return k == provider_kind::anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

// `api_key: {env: NAME}` or `{file: PATH}`. A key written into the file itself is refused: the
// file ends up in backups, repositories and `airlock check` output pasted into tickets.
void read_api_key(reader& r, YAML::Node const& v, std::string const& kp, provider_config& pc) {
    if (!v.IsMap()) {
        r.fail("invalid_value", kp + " must be {env: NAME} or {file: PATH}, not " + shape(v) +
                                    "; an API key written into the configuration ends up wherever the file goes");
        return;
    }
    if (!r.mapping(v, kp, {"env", "file"})) return;
    auto key = read_secret_value(r, v, kp);
    if (!key) return;
    if (key->empty()) {
        r.fail("empty_field", kp + " names an empty key");
        return;
    }
    // The key is a credential: say what is wrong with it, never what it holds.
    if (key->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
        r.fail("invalid_value", kp + " is a key with a line break or NUL byte, which no HTTP header can carry");
        return;
    }
    pc.api_key = std::move(*key);
    if (auto const e = v["env"]) pc.api_key_env = e.Scalar();
    if (auto const f = v["file"]) pc.api_key_file = r.resolve(f.Scalar());
}

void read_http_provider(reader& r, YAML::Node const& n, std::string const& p, provider_config& pc) {
    if (n["script"]) r.fail("conflicting_fields", p + ".script applies only to scripted providers");
    std::optional<std::string> url = default_base_url(pc.kind);
    if (auto const v = n["base_url"]) url = r.text(v, p + ".base_url");
    if (url) {
        auto e = mcp::parse_http_url(*url);
        if (!e) {
            r.fail("invalid_url", p + ".base_url: " + e.error().message);
        } else if (e->target.find('?') != std::string::npos) {
            r.fail("invalid_url", p + ".base_url " + in_quotes(*url) + " has a query; request paths are appended to it");
        } else {
            pc.base_url = *url;
            pc.destination = core::remote_destination{e->scheme, core::ascii_lowercase(e->host), e->port};
        }
    }
    if (auto const v = n["api_key"]) read_api_key(r, v, p + ".api_key", pc);
    else if (pc.kind == provider_kind::anthropic)
        r.fail("missing_field", p + ".api_key is required for an anthropic provider ({env: NAME} or {file: PATH})");
    if (auto const v = n["model"]; !v) {
        r.fail("missing_field", p + ".model is required (the model asked for when a run names none)");
    } else if (auto m = r.text(v, p + ".model")) {
        pc.model = *m;
    }
    if (auto const v = n["max_tokens"]) {
        if (auto m = r.count(v, p + ".max_tokens", 1, 10'000'000)) pc.max_tokens = *m;
    }
    auto const* remote = std::get_if<core::remote_destination>(&pc.destination);
    if (remote && remote->host == "api.openai.com") pc.max_tokens_field = "max_completion_tokens";
    if (auto const v = n["max_tokens_field"]) {
        if (pc.kind != provider_kind::openai)
            r.fail("conflicting_fields", p + ".max_tokens_field applies only to openai providers");
        else if (auto f = r.choice(v, p + ".max_tokens_field", {"max_tokens", "max_completion_tokens"}))
            pc.max_tokens_field = *f;
    }
    if (auto const v = n["deadline"]) {
        if (auto d = r.duration(v, p + ".deadline", milliseconds(1))) pc.deadline = *d;
    }
    if (auto const v = n["max_retries"]) {
        if (auto m = r.count(v, p + ".max_retries", 0, 10)) pc.max_retries = static_cast<unsigned>(*m);
    }
    if (auto const v = n["max_retry_wait"]) {
        if (auto d = r.duration(v, p + ".max_retry_wait", milliseconds(0))) pc.max_retry_wait = *d;
    }
    if (auto const v = n["max_connections"]) {
        if (auto m = r.count(v, p + ".max_connections", 1, 100'000)) pc.max_connections = *m;
    }
    if (auto const v = n["headers"]) {
        bool anthropic = pc.kind == provider_kind::anthropic;
        read_headers(r, v, p + ".headers", pc.headers, [anthropic](std::string const& name) {
            if (mcp::is_transport_header(name)) return std::string("is set by airlock itself and cannot be configured");
            if (core::iequals(name, anthropic ? "x-api-key" : "authorization") ||
                (anthropic && core::iequals(name, "anthropic-version")))
                return std::string("is set by the provider from api_key; configure the key there");
            return std::string();
        });
    }
    if (auto const v = n["tls"]) read_tls(r, v, p + ".tls", url, "provider " + pc.name, pc.verify_peer, pc.ca_file);
}

std::optional<provider_config> read_provider(reader& r, std::string const& name, YAML::Node const& n,
                                             std::string const& p) {
    if (!r.mapping(n, p, {"kind", "base_url", "api_key", "headers", "model", "max_tokens", "max_tokens_field",
                          "deadline", "max_retries", "max_retry_wait", "max_connections", "tls", "script"}))
        return std::nullopt;
    auto before = r.problems.size();
    provider_config pc;
    pc.name = name;
    if (auto problem = core::tool_id_component_problem(name, p); !problem.empty())
        r.fail("invalid_name", problem + " (it names the provider in model://KIND/NAME)");
    auto const k = n["kind"];
    if (!k) {
        r.fail("missing_field", p + ".kind is required: openai, anthropic or scripted");
        return std::nullopt;
    }
    auto kind = r.choice(k, p + ".kind", {"openai", "anthropic", "scripted"});
    if (!kind) return std::nullopt;
    pc.kind = *kind == "openai" ? provider_kind::openai : *kind == "anthropic" ? provider_kind::anthropic
                                                                              : provider_kind::scripted;
    if (pc.kind == provider_kind::scripted) {
        for (auto key : {"base_url", "api_key", "headers", "max_tokens", "max_tokens_field", "deadline", "max_retries",
                         "max_retry_wait", "max_connections", "tls"})
            if (n[key]) r.fail("conflicting_fields", p + "." + key + " applies only to openai and anthropic providers");
        pc.destination = core::local_destination{};
        if (auto const v = n["model"]) {
            if (auto m = r.text(v, p + ".model")) pc.model = *m;
        }
        if (auto const v = n["script"]; !v) r.fail("missing_field", p + ".script is required (the file of turns it plays)");
        else if (auto got = r.file(v, p + ".script", max_manifest_bytes)) pc.script = got->first;
    } else {
        read_http_provider(r, n, p, pc);
    }
    if (r.problems.size() != before) return std::nullopt;
    return pc;
}

}  // namespace

void read_providers(reader& r, YAML::Node const& n, std::vector<provider_config>& out) {
    auto entries = r.entries(n, "providers");
    if (!entries) return;
    for (auto const& [name, value] : *entries)
        if (auto pc = read_provider(r, name, value, child_path("providers", name))) out.push_back(std::move(*pc));
}

}  // namespace airlock::service::config_detail
