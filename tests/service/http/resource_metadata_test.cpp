// OAuth 2.0 Protected Resource Metadata (RFC 9728) as airlock serves it: where the document is for
// a resource URL, what it says, and how other methods and paths are answered.
#include "service/http/resource_metadata.hpp"

#include <boost/json/parse.hpp>

#include <catch2/catch.hpp>

using namespace airlock::service;
namespace json = boost::json;

namespace {

resource_metadata md() {
    return {"https://airlock.example.com/mcp", {"https://idp.example.com/realms/a"}, {"mcp:tools", "mcp:admin"}};
}

http_request get(std::string_view target, http::verb v = http::verb::get) {
    http_request r{v, target, 11};
    r.set(http::field::host, "airlock.example.com");
    return r;
}

}  // namespace

TEST_CASE("resource metadata: its URL inserts the well-known segment before the resource's path") {
    CHECK(resource_metadata_url("https://airlock.example.com/mcp") ==
          "https://airlock.example.com/.well-known/oauth-protected-resource/mcp");
    CHECK(resource_metadata_url("https://airlock.example.com:8443/tenant/a/mcp/") ==
          "https://airlock.example.com:8443/.well-known/oauth-protected-resource/tenant/a/mcp");
    CHECK(resource_metadata_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080/.well-known/oauth-protected-resource");
    CHECK(resource_metadata_paths("https://a.example/mcp") ==
          std::vector<std::string>{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"});
    CHECK(resource_metadata_paths("https://a.example") == std::vector<std::string>{"/.well-known/oauth-protected-resource"});
}

TEST_CASE("resource metadata: both paths answer the document a client needs to find its authorization server") {
    for (auto target : {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
                        "/.well-known/oauth-protected-resource?x=1"}) {
        INFO(target);
        auto res = resource_metadata_reply(md(), get(target));
        REQUIRE(res);
        CHECK(res->result() == http::status::ok);
        CHECK(res->at(http::field::content_type) == "application/json");
        CHECK(res->at(http::field::access_control_allow_origin) == "*");
        auto doc = json::parse(res->body()).as_object();
        CHECK(doc.at("resource") == "https://airlock.example.com/mcp");
        CHECK(doc.at("authorization_servers") == json::array{"https://idp.example.com/realms/a"});
        CHECK(doc.at("scopes_supported") == json::array{"mcp:tools", "mcp:admin"});
        CHECK(doc.at("bearer_methods_supported") == json::array{"header"});
    }
}

TEST_CASE("resource metadata: HEAD has the length and no body; OPTIONS is a preflight; POST is 405; other paths are not its") {
    auto head = resource_metadata_reply(md(), get("/.well-known/oauth-protected-resource/mcp", http::verb::head));
    REQUIRE(head);
    CHECK(head->body().empty());
    CHECK(std::stoul(std::string(head->at(http::field::content_length))) > 0);

    auto pre = resource_metadata_reply(md(), get("/.well-known/oauth-protected-resource/mcp", http::verb::options));
    REQUIRE(pre);
    CHECK(pre->result() == http::status::no_content);
    CHECK(pre->at(http::field::access_control_allow_origin) == "*");

    auto post = resource_metadata_reply(md(), get("/.well-known/oauth-protected-resource", http::verb::post));
    REQUIRE(post);
    CHECK(post->result() == http::status::method_not_allowed);
    CHECK(post->at(http::field::allow) == "GET, HEAD, OPTIONS");

    CHECK_FALSE(resource_metadata_reply(md(), get("/.well-known/oauth-protected-resource/other")));
    CHECK_FALSE(resource_metadata_reply(md(), get("/.well-known/openid-configuration")));
    CHECK_FALSE(resource_metadata_reply(md(), get("/mcp")));
    // Without a scope list the member is left out, not sent empty.
    auto bare = resource_metadata_reply({"https://a.example/mcp", {"https://idp"}, {}}, get("/.well-known/oauth-protected-resource/mcp"));
    REQUIRE(bare);
    CHECK_FALSE(json::parse(bare->body()).as_object().contains("scopes_supported"));
}
