#pragma once
// Numbers to throw at anything that carries JSON values into the journal: doubles from random bit
// patterns over the whole range (every exponent, subnormals, both signs), random ratios in [0, 1)
// as producers of JSON usually write them, and the edges of ECMAScript's number formatting.

#include <boost/json/value.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace airlock::testing {

inline std::vector<double> number_edges() {
    return {0.9424502837770503,     0.20595871281932654,    5e-324,  2.2250738585072014e-308, 2.225073858507201e-308,
            1.7976931348623157e308, -1.7976931348623157e308, 1e21,   999999999999999900000.0, 1e-7,
            1e-6,                   0.000001234,            1e20,    123456789012345680000.0, 9007199254740993.0,
            9007199254740992.0,     18446744073709551616.0, 9223372036854775808.0, 0.1, 0.3, -0.5, 1.5e300,
            4.35e-321,              1.0 / 3.0,              2.0 / 3.0};
}

// `n` doubles, finite, reproducible from `seed`: half random bit patterns, half random ratios.
inline std::vector<double> random_doubles(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> ratio(0.0, 1.0);
    std::vector<double> out;
    out.reserve(n);
    while (out.size() < n) {
        double d = out.size() % 2 ? ratio(gen) : std::bit_cast<double>(gen());
        if (std::isfinite(d)) out.push_back(d);
    }
    return out;
}

// Whether a value read back is the number `want`, to the bit. RFC 8785 writes -0 as 0 and integral
// doubles as integers (1e20 reads back as an integer), so the read-back value is compared as a double.
inline bool same_number(boost::json::value const& got, double want) {
    if (!got.is_number()) return false;
    double d = got.to_number<double>();
    return std::bit_cast<std::uint64_t>(d) == std::bit_cast<std::uint64_t>(want) || (d == 0 && want == 0);
}

// A value nested `levels` deep, `{}` being level 1: {"n":{"n":…{"leaf":1}}}.
inline boost::json::value nested_objects(std::size_t levels) {
    boost::json::value v = boost::json::object{{"leaf", 1}};
    for (std::size_t i = 1; i < levels; ++i) v = boost::json::object{{"n", std::move(v)}};
    return v;
}

}  // namespace airlock::testing
