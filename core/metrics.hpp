#pragma once
// A small metrics registry rendered in the Prometheus text exposition format (0.0.4). Pure: atomics
// and strings, no clock, no I/O. Recording is lock-free: counters, gauges and histograms are
// relaxed atomics, and finding the series of a label set (`with`) probes an append-only table
// without a lock; only the first use of a label set, and a scrape, take the family's mutex.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::core::metrics {

class counter {
public:
    void inc(std::uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
    std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

class gauge {
public:
    void set(std::int64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
    void add(std::int64_t d = 1) noexcept { value_.fetch_add(d, std::memory_order_relaxed); }
    void sub(std::int64_t d = 1) noexcept { value_.fetch_sub(d, std::memory_order_relaxed); }
    std::int64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::int64_t> value_{0};
};

// A value whose truth is kept elsewhere (the kernel's count of CPU seconds, a file's size), read
// when a scrape comes and set whole: a double, never added to. sampled_counter is for a value that
// only grows (TYPE counter), sampled_gauge for one that may also fall.
class sampled {
public:
    void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
    double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0};
};
class sampled_counter final : public sampled {};
class sampled_gauge final : public sampled {};

// Buckets with fixed upper bounds (ascending, +Inf implied).
class histogram {
public:
    explicit histogram(std::span<double const> bounds);
    void observe(double v) noexcept;

    struct snapshot {
        std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf (== count)
        double sum = 0;
    };
    snapshot read() const;
    std::span<double const> bounds() const noexcept { return bounds_; }

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // per bucket, not cumulative; last is +Inf
    std::atomic<double> sum_{0};
};

enum class metric_type { counter, gauge, histogram };

// One metric name with its HELP, TYPE and label names; the series are its label sets.
class family_base {
public:
    family_base(std::string name, std::string help, std::vector<std::string> labels, metric_type type);
    virtual ~family_base() = default;
    family_base(family_base const&) = delete;
    family_base& operator=(family_base const&) = delete;

    std::string const& name() const noexcept { return name_; }
    // Appends HELP, TYPE and every series (in the order they were first used).
    void render(std::string& out) const;

protected:
    virtual void render_series(std::string& out) const = 0;
    std::string name_, help_;
    std::vector<std::string> labels_;
    metric_type type_;
};

// The label set every family falls back to when it already holds its maximum number of series:
// each label value is this text. It bounds the memory a family can take whatever the input.
inline constexpr std::string_view overflow_label = "_overflow";

template <class Metric>
class family final : public family_base {
public:
    family(std::string name, std::string help, std::vector<std::string> labels, std::size_t max_series,
           std::vector<double> bounds = {});

    // The series for these label values (one per label name, in order). Lock-free once it exists.
    Metric& with(std::initializer_list<std::string_view> values) {
        return with(std::span<std::string_view const>(values.begin(), values.size()));
    }
    Metric& with(std::span<std::string_view const> values);
    std::size_t size() const;

private:
    struct series {
        template <class... A>
        explicit series(std::vector<std::string> v, A&&... a) : values(std::move(v)), metric(std::forward<A>(a)...) {}
        std::vector<std::string> values;
        Metric metric;
    };
    series* find(std::span<std::string_view const> values, std::size_t hash) const noexcept;
    series& make(std::vector<std::string> values);
    void render_series(std::string& out) const override;

    std::vector<double> bounds_;
    std::size_t max_series_;
    std::size_t mask_;  // slot count - 1 (a power of two, at least twice max_series)
    std::unique_ptr<std::atomic<series*>[]> slots_;
    mutable std::mutex mutex_;  // taken to add a series and to render
    std::deque<series> owned_;  // stable addresses
    series* overflow_ = nullptr;
};

class registry {
public:
    // Names must match [a-zA-Z_:][a-zA-Z0-9_:]* and be unique; labels [a-zA-Z_][a-zA-Z0-9_]*.
    // A violation is a bug: std::invalid_argument.
    family<counter>& add_counter(std::string name, std::string help, std::vector<std::string> labels = {},
                                 std::size_t max_series = 1000);
    family<gauge>& add_gauge(std::string name, std::string help, std::vector<std::string> labels = {},
                             std::size_t max_series = 1000);
    family<histogram>& add_histogram(std::string name, std::string help, std::vector<std::string> labels,
                                     std::vector<double> bounds, std::size_t max_series = 1000);
    family<sampled_counter>& add_sampled_counter(std::string name, std::string help,
                                                 std::vector<std::string> labels = {});
    family<sampled_gauge>& add_sampled_gauge(std::string name, std::string help, std::vector<std::string> labels = {});

    // Every family, in registration order, as a text exposition (Content-Type text/plain; version=0.0.4).
    std::string render() const;

private:
    void check_new(std::string const& name, std::vector<std::string> const& labels) const;
    template <class Metric>
    family<Metric>& add(std::string name, std::string help, std::vector<std::string> labels, std::size_t max_series,
                        std::vector<double> bounds);
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<family_base>> families_;
};

// Label value and HELP escaping of the text format, and a sample value as Prometheus parses it.
std::string escape_label_value(std::string_view v);
std::string escape_help(std::string_view v);
std::string format_value(double v);

}  // namespace airlock::core::metrics
