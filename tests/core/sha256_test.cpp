#include "core/sha256.hpp"

#include <catch2/catch.hpp>

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
