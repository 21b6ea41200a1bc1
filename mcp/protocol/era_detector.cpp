#include "mcp/protocol/era_detector.hpp"

#include "mcp/protocol/negotiation.hpp"
#include "mcp/protocol/post_rules.hpp"

#include <boost/json/value_from.hpp>

#include <algorithm>

namespace airlock::mcp {

namespace json = boost::json;

namespace {

// Request ids of the detector's own requests: strings, so they cannot collide with a client's
// integer ids, and unique between probe and initialize so a late probe reply is recognisable.
constexpr std::string_view probe_id = "airlock-era-probe";
constexpr std::string_view initialize_id = "airlock-initialize";

std::string version_list(std::vector<std::string> const& v) {
    std::string out;
    for (auto const& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
}

}  // namespace

era_detector::era_detector(options o) : opts_(std::move(o)) {}

era_detector::step era_detector::fail(std::string why) {
    state_ = state::finished;
    step s;
    s.kind = step_kind::failed;
    s.reason = std::move(why);
    return s;
}

era_detector::step era_detector::decide_modern(std::string v, std::string why, std::optional<discover_result> d) {
    state_ = state::finished;
    step s;
    s.kind = step_kind::done;
    s.decided_era = era::modern;
    s.version = std::move(v);
    s.discovered = std::move(d);
    s.reason = std::move(why);
    return s;
}

era_detector::step era_detector::send_initialize(std::string legacy_version, std::string why) {
    state_ = state::initializing;
    fallback_reason_ = std::move(why);
    initialize_params p{legacy_version, opts_.client_capabilities, opts_.client_info, std::nullopt};
    step s;
    s.kind = step_kind::send;
    s.request = mcp::request{std::string(initialize_id), std::string(method::initialize), json::value_from(p).as_object()};
    s.decided_era = era::legacy;
    s.version = std::move(legacy_version);
    s.reason = fallback_reason_;
    return s;
}

era_detector::step era_detector::choose_from(std::vector<std::string> const& offered, std::string const& context,
                                             std::optional<discover_result> d) {
    for (auto const& v : opts_.versions) {
        if (std::find(offered.begin(), offered.end(), v) == offered.end()) continue;
        auto e = era_of(v);
        if (e == era::modern) return decide_modern(v, context + " " + version_list(offered) + "; using " + v, std::move(d));
        if (e == era::legacy) return send_initialize(v, context + " only legacy versions in common; initializing with " + v);
    }
    return fail(context + " " + version_list(offered) + ", and airlock speaks " + version_list(opts_.versions) +
                ": no version in common");
}

era_detector::step era_detector::start() {
    std::string modern, legacy;
    for (auto const& v : opts_.versions) {
        if (modern.empty() && era_of(v) == era::modern) modern = v;
        if (legacy.empty() && era_of(v) == era::legacy) legacy = v;
    }
    if (modern.empty()) {
        if (legacy.empty()) return fail("no protocol version airlock speaks is configured");
        return send_initialize(legacy, "configured for legacy versions only");
    }
    state_ = state::probing;
    request_meta meta{modern, opts_.client_capabilities, opts_.client_info, std::nullopt, std::nullopt};
    json::object params;
    set_request_meta(params, meta);
    step s;
    s.kind = step_kind::send;
    s.request = mcp::request{std::string(probe_id), std::string(method::server_discover), std::move(params)};
    s.decided_era = era::modern;
    s.version = modern;
    s.reason = "probing with server/discover";
    return s;
}

era_detector::step era_detector::on_reply(probe_reply const& reply) {
    auto legacy_fallback = [&](std::string why) {
        for (auto const& v : opts_.versions)
            if (era_of(v) == era::legacy) return send_initialize(v, std::move(why) + ": treating the server as legacy");
        return fail(std::move(why) + ": the server looks legacy, and airlock is configured for modern versions only");
    };
    auto status_text = [&] { return reply.http_status ? "HTTP " + std::to_string(*reply.http_status) + " " : std::string(); };

    if (state_ == state::probing) {
        if (!reply.body) return legacy_fallback(status_text() + "reply to server/discover is not a JSON-RPC message");
        auto const& body = *reply.body;
        if (auto const* r = std::get_if<response>(&body)) {
            if (r->id != request_id(std::string(probe_id))) return step{};
            auto d = parse_discover_result(json::value(r->result));
            if (!d) return legacy_fallback("the reply to server/discover is not a DiscoverResult (" + d.error().message + ")");
            auto offered = d->supported_versions;
            return choose_from(offered, "server/discover lists", std::move(*d));
        }
        if (auto const* e = std::get_if<error_response>(&body)) {
            if (e->id && *e->id != request_id(std::string(probe_id))) return step{};
            auto code = e->error.code;
            if (code == rpc_code::unsupported_protocol_version) {
                auto data = e->error.data ? parse_unsupported_version_data(*e->error.data)
                                          : core::result<unsupported_version_data>(core::make_error("missing", "no data"));
                if (!data)
                    return fail("the server is modern (UnsupportedProtocolVersion) but did not list the versions it supports");
                return choose_from(data->supported, "the server refused our version (UnsupportedProtocolVersion); it supports",
                                   std::nullopt);
            }
            if (is_modern_error(code, reply.http_status)) {
                std::string preferred;
                for (auto const& v : opts_.versions)
                    if (era_of(v) == era::modern) {
                        preferred = v;
                        break;
                    }
                return decide_modern(preferred, "the server answered the probe with the modern error " +
                                                    std::string(rpc_code_name(code)) + " (" + e->error.message + ")");
            }
            // The spec forbids keying the fallback on one code: legacy servers answer unknown
            // pre-initialize methods with whatever they like (-32601, -32602, -32000, ...).
            return legacy_fallback(status_text() + "server/discover failed with code " + std::to_string(code) + " (" +
                                   e->error.message + ")");
        }
        return step{};  // a notification or request before the reply (e.g. a log line): keep waiting
    }

    if (state_ == state::initializing) {
        if (!reply.body) return fail(status_text() + "reply to initialize is not a JSON-RPC message");
        auto const& body = *reply.body;
        if (auto const* r = std::get_if<response>(&body)) {
            if (r->id != request_id(std::string(initialize_id))) return step{};
            auto ir = parse_initialize_result(json::value(r->result));
            if (!ir) return fail(ir.error().message);
            auto v = accept_initialize_version(ir->protocol_version);
            if (!v) return fail(v.error().message);
            state_ = state::finished;
            step s;
            s.kind = step_kind::done;
            s.decided_era = era::legacy;
            s.version = std::move(*v);
            s.notification = mcp::notification{std::string(method::initialized), std::nullopt};
            s.initialized = std::move(*ir);
            s.reason = fallback_reason_ + "; initialize agreed on " + s.version;
            return s;
        }
        if (auto const* e = std::get_if<error_response>(&body)) {
            if (e->id && *e->id != request_id(std::string(initialize_id))) return step{};
            // A modern-only server names its versions in this message; it may be all the user gets.
            return fail("the server refused initialize (" + std::to_string(e->error.code) + ": " + e->error.message + ")");
        }
        return step{};
    }
    return step{};
}

era_detector::step era_detector::on_timeout() {
    if (state_ == state::probing) {
        if (opts_.transport == transport_kind::stdio) {
            // On stdio a legacy server may simply ignore a method it does not know before initialize.
            for (auto const& v : opts_.versions)
                if (era_of(v) == era::legacy) return send_initialize(v, "no reply to server/discover in time: treating the server as legacy");
            return fail("no reply to server/discover in time, and airlock is configured for modern versions only");
        }
        return fail("no reply to server/discover in time");
    }
    if (state_ == state::initializing) return fail("no reply to initialize in time");
    return step{};
}

}  // namespace airlock::mcp
