// Compact JWS parsing (service/http/jose): an accepted token's parts are its own — the signing
// input is the first two parts, the header's alg is the algorithm — and base64url has one spelling
// per byte string, so decoding then encoding gives the same text back.
#include "service/http/jose.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace airlock;
using namespace airlock::service;
using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto text = fuzz::as_text(data, size);
    if (auto bytes = jose::base64url_decode(text))
        require(jose::base64url_encode(*bytes) == text, "two base64url spellings decode to the same bytes");
    auto jws = jose::parse_compact(text);
    if (!jws) {
        auto const& code = jws.error().code;
        require(code == "malformed" || code == "bad_alg", "a refused token has an undocumented code");
        return 0;
    }
    require(text.size() <= jose::max_token_bytes, "a token over the size limit is accepted");
    auto first = text.find('.');
    auto second = text.find('.', first + 1);
    require(second != std::string_view::npos && text.find('.', second + 1) == std::string_view::npos,
            "an accepted token is not three parts");
    require(jws->signing_input == text.substr(0, second), "the signing input is not the token's first two parts");
    auto sig = jose::base64url_decode(text.substr(second + 1));
    require(sig.has_value() && *sig == jws->signature, "the signature is not the third part decoded");
    auto const* alg = jws->header.if_contains("alg");
    require(alg && alg->is_string() && jose::alg_from_string(std::string_view(alg->get_string())) == jws->algorithm,
            "the algorithm is not the header's alg");
    require(!jws->header.contains("crit"), "a token with crit is accepted");
    return 0;
}
