#pragma once
// The domain-failure tier: a result carries either a value or an error that says, in words a user
// can act on, which field or input is wrong. I/O failures use error_code; bugs use exceptions.

#include "core/errc.hpp"

#include <boost/system/result.hpp>

#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

namespace airlock::core {

struct error {
    // Not an aggregate on purpose: C++20 would let a lone std::string initialise an aggregate,
    // which makes result<std::string> ambiguous between value and error.
    error() = default;
    error(std::string c, std::string m) : code(std::move(c)), message(std::move(m)) {}

    std::string code;     // stable machine-readable reason, e.g. "duplicate_key"
    std::string message;  // human-readable, names the field or position at fault

    friend bool operator==(error const&, error const&) = default;
};

// So test frameworks and logs can print a failed result directly.
inline std::ostream& operator<<(std::ostream& os, error const& e) { return os << e.code << ": " << e.message; }

inline error make_error(std::string code, std::string message) {
    return error{std::move(code), std::move(message)};
}

// A failure that reaches a client as one of core::errc: its code is the errc's wire spelling, so a
// misspelt one does not compile. (Codes no client reads - a parser's "duplicate_key", the runner's
// "too_many_runs" - stay strings; service/rest/runner_control maps the runner's.)
inline error make_error(errc code, std::string message) {
    return error{std::string(to_string(code)), std::move(message)};
}

// The errc an error's code spells, if it spells one.
inline std::optional<errc> errc_of(error const& e) noexcept { return errc_from_string(e.code); }

template <class T>
using result = boost::system::result<T, error>;

// Thrown by result<T>::value() on an error: reading a value that is not there is a bug.
class error_exception : public std::runtime_error {
public:
    explicit error_exception(error e) : std::runtime_error(e.code + ": " + e.message), error_(std::move(e)) {}
    error const& err() const noexcept { return error_; }

private:
    error error_;
};

[[noreturn]] inline void throw_exception_from_error(error const& e, boost::source_location const&) {
    throw error_exception(e);
}

}  // namespace airlock::core
