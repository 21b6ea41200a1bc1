#include "core/sha256.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace airlock::core;

TEST_CASE("SHA-256 matches the NIST vector for \"abc\"") {
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("SHA-256 matches the NIST vector for the empty string") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("SHA-256 matches the NIST two-block vector") {
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("incremental hashing equals hashing the concatenation") {
    sha256_hasher h;
    h.update("ab").update("c");
    CHECK(to_hex(h.finish()) == sha256_hex("abc"));
}

TEST_CASE("HMAC-SHA256 matches RFC 4231 test case 2 (a short key is zero-padded)") {
    std::array<std::uint8_t, 32> key{};
    std::memcpy(key.data(), "Jefe", 4);
    CHECK(airlock::core::to_hex(airlock::core::hmac_sha256(key, "what do ya want for nothing?")) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("constant-time equality tells equal strings from different and differently long ones") {
    using airlock::core::equal_constant_time;
    CHECK(equal_constant_time("abc", "abc"));
    CHECK_FALSE(equal_constant_time("abc", "abd"));
    CHECK_FALSE(equal_constant_time("abc", "abcd"));
    CHECK_FALSE(equal_constant_time("abcd", "abc"));
}
