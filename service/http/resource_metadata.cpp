#include "service/http/resource_metadata.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>

namespace airlock::service {

namespace json = boost::json;

namespace {

constexpr std::string_view well_known = "/.well-known/oauth-protected-resource";

// scheme://authority and the path of an absolute URL (the path without a trailing slash).
std::pair<std::string, std::string> split_url(std::string_view url) {
    auto const scheme_end = url.find("://");
    auto const path_at = scheme_end == std::string_view::npos ? std::string_view::npos : url.find('/', scheme_end + 3);
    std::string origin(url.substr(0, path_at));
    std::string path(path_at == std::string_view::npos ? std::string_view{} : url.substr(path_at));
    while (!path.empty() && path.back() == '/') path.pop_back();
    return {origin, path};
}

json::array strings(std::vector<std::string> const& v) {
    json::array a;
    for (auto const& s : v) a.emplace_back(s);
    return a;
}

}  // namespace

std::string resource_metadata_url(std::string_view resource) {
    auto [origin, path] = split_url(resource);
    return origin + std::string(well_known) + path;
}

std::vector<std::string> resource_metadata_paths(std::string_view resource) {
    auto path = split_url(resource).second;
    std::vector<std::string> out{std::string(well_known) + path};
    if (!path.empty()) out.emplace_back(well_known);
    return out;
}

std::optional<http_response> resource_metadata_reply(resource_metadata const& md, http_request const& req) {
    auto target = std::string_view(req.target().data(), req.target().size());
    auto path = target.substr(0, target.find('?'));
    auto paths = resource_metadata_paths(md.resource);
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) return std::nullopt;
    if (req.method() == http::verb::options) {
        http_response res{http::status::no_content, req.version()};
        res.set(http::field::access_control_allow_origin, "*");
        res.set(http::field::access_control_allow_methods, "GET");
        res.set(http::field::access_control_max_age, "600");
        res.set(http::field::allow, "GET, HEAD, OPTIONS");
        res.prepare_payload();
        return res;
    }
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
        auto res = json_response(http::status::method_not_allowed,
                                 R"({"error":"method_not_allowed","error_description":"use GET"})", req.version());
        res.set(http::field::allow, "GET, HEAD, OPTIONS");
        return res;
    }
    json::object doc{{"resource", md.resource},
                     {"authorization_servers", strings(md.authorization_servers)},
                     {"bearer_methods_supported", json::array{"header"}},
                     {"resource_name", "airlock"}};
    if (!md.scopes_supported.empty()) doc["scopes_supported"] = strings(md.scopes_supported);
    auto res = json_response(http::status::ok, json::serialize(doc), req.version());
    // Public by design: any page may read where to log in; nothing here is a credential.
    res.set(http::field::access_control_allow_origin, "*");
    res.set(http::field::cache_control, "max-age=300");
    if (req.method() == http::verb::head) {
        auto const length = res.body().size();
        res.body().clear();
        res.content_length(length);
    }
    return res;
}

}  // namespace airlock::service
