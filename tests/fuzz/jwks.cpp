// JWKS parsing (service/http/jose): every key kept is a usable public key that fits its own alg,
// every key dropped is reported, and lookup by kid finds the first key with that kid.
#include "service/http/jose.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace airlock;
using namespace airlock::service;
using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto set = jose::parse_jwks(fuzz::as_text(data, size));
    if (!set) {
        require(!set.error().message.empty(), "a refused JWKS has no message");
        return 0;
    }
    require(set->keys.size() <= jose::max_jwks_keys, "more keys kept than the limit");
    for (auto const& k : set->keys) {
        require(k.key && k.key->native(), "a kept key has no public key");
        require(k.use.empty() || k.use == "sig", "a key for another use than signing is kept");
        if (k.alg) require(k.key->fits(*k.alg), "a kept key does not fit its own alg");
        if (k.key->kty() == "RSA") require(k.key->bits() >= jose::min_rsa_bits, "a short RSA key is kept");
        auto const* found = set->find(k.kid);
        require(found && found->kid == k.kid, "find does not find a kid the set holds");
    }
    return 0;
}
