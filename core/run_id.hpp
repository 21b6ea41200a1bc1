#pragma once
// RunId: a ULID (48-bit millisecond time + 80 random bits, 26 Crockford base32 characters), so
// run ids sort by admission time. The clock and the random source are injected: core reads neither.

#include "core/error.hpp"

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace airlock::core {

class run_id {
public:
    static run_id from_parts(std::uint64_t unix_ms, std::array<std::uint8_t, 10> const& randomness);
    // Accepts the 26-character form, case-insensitively, and Crockford's aliases (I, L → 1; O → 0).
    static result<run_id> parse(std::string_view text);

    std::string const& str() const noexcept { return text_; }
    std::uint64_t unix_ms() const noexcept;

    friend auto operator<=>(run_id const&, run_id const&) = default;

private:
    explicit run_id(std::string text) : text_(std::move(text)) {}
    std::string text_;  // canonical: upper case
};

// Generates ULIDs that are strictly increasing even within one millisecond (the random part is
// incremented rather than redrawn, as the ULID spec's monotonic mode does).
class run_id_generator {
public:
    using clock_fn = std::function<std::uint64_t()>;                           // unix milliseconds
    using random_fn = std::function<void(std::uint8_t* out, std::size_t n)>;  // fills n bytes

    run_id_generator(clock_fn clock, random_fn random) : clock_(std::move(clock)), random_(std::move(random)) {}
    run_id next();

private:
    clock_fn clock_;
    random_fn random_;
    std::uint64_t last_ms_ = 0;
    std::array<std::uint8_t, 10> last_random_{};
    bool has_last_ = false;
};

// The identity of one effect (a model or tool call) within a run, derived from the run's state so
// replay and recovery compute the same key: "<run_id>/<step, 6 digits>/<tool|model>".
class effect_key {
public:
    enum class kind { model, tool };
    static effect_key make(run_id const& run, std::uint32_t step, kind k);
    static result<effect_key> parse(std::string_view text);

    std::string const& str() const noexcept { return text_; }
    core::run_id const& run() const noexcept { return run_; }
    std::uint32_t step() const noexcept { return step_; }
    kind what() const noexcept { return kind_; }

    friend bool operator==(effect_key const& a, effect_key const& b) noexcept { return a.text_ == b.text_; }
    friend auto operator<=>(effect_key const& a, effect_key const& b) noexcept { return a.text_ <=> b.text_; }

private:
    effect_key(core::run_id run, std::uint32_t step, kind k);
    core::run_id run_;
    std::uint32_t step_;
    kind kind_;
    std::string text_;
};

}  // namespace airlock::core
