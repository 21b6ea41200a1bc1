#include "service/config/sections.hpp"

#include "service/config/reader.hpp"
#include "mcp/client/http_transport.hpp"

namespace airlock::service::config_detail {

// `tls: {verify, ca_file}` of an https:// endpoint named `who`.
void read_tls(reader& r, YAML::Node const& v, std::string const& tp, std::optional<std::string> const& url,
              std::string const& who, bool& verify_peer, std::optional<std::string>& ca_file) {
    if (!r.mapping(v, tp, {"verify", "ca_file"})) return;
    if (url && !core::ascii_lowercase(*url).starts_with("https:")) r.fail("conflicting_fields", tp + " applies only to an https:// url");
    if (auto const b = v["verify"]) {
        if (auto verify = r.boolean(b, tp + ".verify")) {
            verify_peer = *verify;
            if (!*verify) r.warn(tp + ".verify is false: anyone on the path to " + who + " can read its calls and answer them");
        }
    }
    if (auto const c = v["ca_file"]) {
        if (auto got = r.file(c, tp + ".ca_file", max_manifest_bytes)) ca_file = got->first.string();
    }
}

// `headers: {Name: VALUE}` sent on every request; values inline or `{env}`/`{file}` (see
// read_secret_value). `reserved` gives why a name may not be configured, or "" when it may.
void read_headers(reader& r, YAML::Node const& v, std::string const& hp,
                  std::vector<std::pair<std::string, std::string>>& out,
                  std::function<std::string(std::string const&)> const& reserved) {
    auto entries = r.entries(v, hp);
    if (!entries) return;
    for (auto const& [name, value] : *entries) {
        auto ep = child_path(hp, name);
        // Refused here as well as by the transport, so `airlock check` reports it with the key path.
        if (!mcp::is_header_name(name)) {
            r.fail("invalid_value", ep + ": " + in_quotes(name) + " is not an HTTP header name");
            continue;
        }
        if (auto why = reserved(name); !why.empty()) {
            r.fail("invalid_value", ep + " " + why);
            continue;
        }
        auto same = std::find_if(out.begin(), out.end(), [&](auto const& h) { return core::iequals(h.first, name); });
        if (same != out.end()) {
            r.fail("duplicate_key", ep + " repeats header " + same->first + " (header names ignore case)");
            continue;
        }
        auto s = read_secret_value(r, value, ep);
        if (!s) continue;
        // The value is a credential: say which header is wrong, never what it holds.
        if (s->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
            r.fail("invalid_value", ep + " has a value with a line break or NUL byte");
            continue;
        }
        // Headers are how credentials travel: a value written inline is hidden like one from a file.
        r.secrets.push_back(*s);
        out.emplace_back(name, std::move(*s));
    }
}

}  // namespace airlock::service::config_detail
