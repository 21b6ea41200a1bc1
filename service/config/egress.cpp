#include "service/config/sections.hpp"

#include "service/config/reader.hpp"

#include <charconv>

namespace airlock::service::config_detail {

namespace {

constexpr std::string_view egress_forms = "expected local, process: ARGV0, or http(s)://host[:port]";

// "http(s)://host[:port]" with nothing after the authority but an optional "/".
std::optional<core::remote_destination> parse_remote(reader& r, std::string const& s, std::string const& path) {
    auto sep = s.find("://");
    auto scheme = core::ascii_lowercase(std::string_view(s).substr(0, sep));
    if (scheme != "http" && scheme != "https") {
        r.fail("invalid_destination", path + " is " + in_quotes(s) + "; the scheme must be http or https");
        return std::nullopt;
    }
    std::string_view rest = std::string_view(s).substr(sep + 3);
    if (rest.ends_with('/')) rest.remove_suffix(1);
    if (rest.find_first_of("/?#") != std::string_view::npos) {
        r.fail("invalid_destination",
               path + " is " + in_quotes(s) + "; an egress entry names a host and port, not a path");
        return std::nullopt;
    }
    if (rest.find('@') != std::string_view::npos) {
        r.fail("invalid_destination", path + " carries user information; an egress entry names a host and port only");
        return std::nullopt;
    }
    core::remote_destination d{scheme, "", static_cast<std::uint16_t>(scheme == "https" ? 443 : 80)};
    std::string_view port;
    bool has_port = false;
    if (rest.starts_with('[')) {
        auto close = rest.find(']');
        if (close == std::string_view::npos) {
            r.fail("invalid_destination", path + " is " + in_quotes(s) + "; an IPv6 host needs its closing ']'");
            return std::nullopt;
        }
        d.host = std::string(rest.substr(1, close - 1));
        auto after = rest.substr(close + 1);
        if (!after.empty()) {
            if (!after.starts_with(':')) {
                r.fail("invalid_destination", path + " is " + in_quotes(s) + "; expected ':' and a port after ']'");
                return std::nullopt;
            }
            port = after.substr(1);
            has_port = true;
        }
    } else {
        auto colon = rest.find(':');
        if (colon != std::string_view::npos && rest.find(':', colon + 1) != std::string_view::npos) {
            r.fail("invalid_destination", path + " is " + in_quotes(s) + "; write an IPv6 host in brackets");
            return std::nullopt;
        }
        d.host = std::string(rest.substr(0, colon));
        if (colon != std::string_view::npos) {
            port = rest.substr(colon + 1);
            has_port = true;
        }
    }
    if (has_port) {
        unsigned p = 0;
        if (all_digits(port) && port.size() <= 5) std::from_chars(port.data(), port.data() + port.size(), p);
        if (p == 0 || p > 65535) {
            r.fail("invalid_destination", path + " is " + in_quotes(s) + "; the port must be a number from 1 to 65535");
            return std::nullopt;
        }
        d.port = static_cast<std::uint16_t>(p);
    }
    if (d.host.ends_with('.')) {
        // Absolute and relative names need not be one host, and upstream URLs refuse the form too.
        r.fail("invalid_destination", path + " is " + in_quotes(s) + "; write the host without a trailing '.'");
        return std::nullopt;
    }
    d.host = core::ascii_lowercase(d.host);
    return d;
}

}  // namespace

void read_egress(reader& r, YAML::Node const& n, core::egress_allowlist& allow) {
    std::string const p = "egress";
    if (!r.sequence(n, p)) return;
    for (std::size_t i = 0; i < n.size(); ++i) {
        auto ip = index_path(p, i);
        auto const item = n[i];
        std::optional<core::destination> d;
        if (item.IsMap()) {
            if (!r.mapping(item, ip, {"process"})) continue;
            auto const v = item["process"];
            if (!v) {
                r.fail("missing_field", ip + " must be local, {process: ARGV0} or a URL");
                continue;
            }
            auto argv0 = r.string(v, ip + ".process");
            if (!argv0) continue;
            d = core::process_destination{argv0->find('/') != std::string::npos ? r.resolve(*argv0).string() : *argv0};
        } else if (item.IsScalar() && classify(item) == scalar_kind::string) {
            auto const& s = item.Scalar();
            if (s == "local") {
                d = core::local_destination{};
            } else if (s.starts_with("process:")) {
                std::string argv0(core::trim_space(std::string_view(s).substr(8)));
                d = core::process_destination{argv0.find('/') != std::string::npos ? r.resolve(argv0).string() : argv0};
            } else if (s.find("://") != std::string::npos) {
                if (auto remote = parse_remote(r, s, ip)) d = *remote;
                else continue;
            } else {
                r.fail("invalid_destination", ip + " is " + in_quotes(s) + "; " + std::string(egress_forms));
                continue;
            }
        } else {
            r.fail("wrong_type", ip + " is " + describe(item) + "; " + std::string(egress_forms));
            continue;
        }
        if (auto added = allow.add(std::move(*d)); !added) r.fail(added.error().code, ip + ": " + added.error().message);
    }
}

}  // namespace airlock::service::config_detail
