#include "core/metrics.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace airlock::core::metrics {

// ---------------------------------------------------------------- histogram

histogram::histogram(std::span<double const> bounds)
    : bounds_(bounds.begin(), bounds.end()), counts_(new std::atomic<std::uint64_t>[bounds.size() + 1]()) {
    if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
        std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end())
        throw std::invalid_argument("histogram bounds must be strictly ascending");
}

void histogram::observe(double v) noexcept {
    // The first bound >= v: Prometheus buckets are "less than or equal".
    auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
}

histogram::snapshot histogram::read() const {
    snapshot s;
    s.cumulative.reserve(bounds_.size() + 1);
    std::uint64_t running = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
        running += counts_[i].load(std::memory_order_relaxed);
        s.cumulative.push_back(running);
    }
    s.sum = sum_.load(std::memory_order_relaxed);
    return s;
}

// ---------------------------------------------------------------- text format

namespace {
// The text format escapes backslash and line feed everywhere, and the double quote in label values.
std::string escape(std::string_view v, bool quote) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '"' && quote) out += "\\\"";
        else out += c;
    }
    return out;
}
}  // namespace

std::string escape_label_value(std::string_view v) { return escape(v, true); }

std::string escape_help(std::string_view v) { return escape(v, false); }

std::string format_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[64];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back exactly
    return std::string(buf, ec == std::errc{} ? p : buf);
}

namespace {

std::string_view type_name(metric_type t) {
    switch (t) {
        case metric_type::counter: return "counter";
        case metric_type::gauge: return "gauge";
        case metric_type::histogram: return "histogram";
    }
    return "untyped";
}

// {a="x",b="y"} with `extra` (already formatted, e.g. le="0.5") appended; "" when there is nothing.
std::string label_block(std::vector<std::string> const& names, std::vector<std::string> const& values,
                        std::string_view extra = {}) {
    if (names.empty() && extra.empty()) return {};
    std::string out = "{";
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i) out += ',';
        out += names[i];
        out += "=\"";
        out += escape_label_value(values[i]);
        out += '"';
    }
    if (!extra.empty()) {
        if (!names.empty()) out += ',';
        out += extra;
    }
    out += '}';
    return out;
}

std::size_t hash_values(std::span<std::string_view const> values) noexcept {
    // FNV-1a over the values with a separator that cannot occur in UTF-8 text.
    std::uint64_t h = 1469598103934665603ull;
    for (auto v : values) {
        for (unsigned char c : v) {
            h ^= c;
            h *= 1099511628211ull;
        }
        h ^= 0xff;
        h *= 1099511628211ull;
    }
    return static_cast<std::size_t>(h);
}

bool valid_name(std::string_view n, bool colon) {
    if (n.empty()) return false;
    for (std::size_t i = 0; i < n.size(); ++i) {
        char c = n[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
                  (i > 0 && c >= '0' && c <= '9');
        if (!ok) return false;
    }
    return true;
}

}  // namespace

// ---------------------------------------------------------------- families

family_base::family_base(std::string name, std::string help, std::vector<std::string> labels, metric_type type)
    : name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)), type_(type) {}

void family_base::render(std::string& out) const {
    out += "# HELP " + name_ + " " + escape_help(help_) + "\n";
    out += "# TYPE " + name_ + " " + std::string(type_name(type_)) + "\n";
    render_series(out);
}

template <class Metric>
family<Metric>::family(std::string name, std::string help, std::vector<std::string> labels, std::size_t max_series,
                       std::vector<double> bounds)
    : family_base(std::move(name), std::move(help), std::move(labels),
                  std::is_same_v<Metric, counter> || std::is_same_v<Metric, sampled_counter> ? metric_type::counter
                  : std::is_same_v<Metric, gauge> || std::is_same_v<Metric, sampled_gauge> ? metric_type::gauge
                                                                                            : metric_type::histogram),
      bounds_(std::move(bounds)),
      max_series_(std::max<std::size_t>(max_series, 1)) {
    std::size_t slots = std::bit_ceil(max_series_ * 2);
    mask_ = slots - 1;
    slots_.reset(new std::atomic<series*>[slots]());
    // Unlabelled families have their one series from the start, so they are never absent from a scrape.
    if (labels_.empty()) with(std::span<std::string_view const>{});
}

template <class Metric>
typename family<Metric>::series* family<Metric>::find(std::span<std::string_view const> values,
                                                      std::size_t hash) const noexcept {
    for (std::size_t i = hash & mask_, probes = 0; probes <= mask_; i = (i + 1) & mask_, ++probes) {
        series* s = slots_[i].load(std::memory_order_acquire);
        if (!s) return nullptr;
        if (std::equal(values.begin(), values.end(), s->values.begin(), s->values.end())) return s;
    }
    return nullptr;
}

template <class Metric>
typename family<Metric>::series& family<Metric>::make(std::vector<std::string> values) {
    if constexpr (std::is_same_v<Metric, histogram>)
        return owned_.emplace_back(std::move(values), std::span<double const>(bounds_));
    else
        return owned_.emplace_back(std::move(values));
}

template <class Metric>
Metric& family<Metric>::with(std::span<std::string_view const> values) {
    if (values.size() != labels_.size())
        throw std::invalid_argument(name_ + ": " + std::to_string(labels_.size()) + " label values expected, got " +
                                    std::to_string(values.size()));
    auto h = hash_values(values);
    if (auto* s = find(values, h)) return s->metric;
    std::lock_guard lock(mutex_);
    if (auto* s = find(values, h)) return s->metric;  // added while we waited
    if (owned_.size() >= max_series_) {
        if (!overflow_) overflow_ = &make(std::vector<std::string>(labels_.size(), std::string(overflow_label)));
        return overflow_->metric;
    }
    auto& s = make(std::vector<std::string>(values.begin(), values.end()));
    std::size_t i = h & mask_;
    while (slots_[i].load(std::memory_order_relaxed)) i = (i + 1) & mask_;
    // Published after it is fully built: a reader that sees the pointer sees the series.
    slots_[i].store(&s, std::memory_order_release);
    return s.metric;
}

template <class Metric>
std::size_t family<Metric>::size() const {
    std::lock_guard lock(mutex_);
    return owned_.size();
}

template <class Metric>
void family<Metric>::render_series(std::string& out) const {
    std::lock_guard lock(mutex_);
    for (auto const& s : owned_) {
        if constexpr (std::is_same_v<Metric, histogram>) {
            auto snap = s.metric.read();
            for (std::size_t i = 0; i <= bounds_.size(); ++i) {
                auto le = "le=\"" + (i < bounds_.size() ? format_value(bounds_[i]) : std::string("+Inf")) + "\"";
                out += name_ + "_bucket" + label_block(labels_, s.values, le) + " " + std::to_string(snap.cumulative[i]) + "\n";
            }
            auto labels = label_block(labels_, s.values);
            out += name_ + "_sum" + labels + " " + format_value(snap.sum) + "\n";
            out += name_ + "_count" + labels + " " + std::to_string(snap.cumulative.back()) + "\n";
        } else if constexpr (std::is_base_of_v<sampled, Metric>) {
            out += name_ + label_block(labels_, s.values) + " " + format_value(s.metric.value()) + "\n";
        } else {
            out += name_ + label_block(labels_, s.values) + " " + std::to_string(s.metric.value()) + "\n";
        }
    }
}

template class family<counter>;
template class family<gauge>;
template class family<histogram>;
template class family<sampled_counter>;
template class family<sampled_gauge>;

// ---------------------------------------------------------------- registry

void registry::check_new(std::string const& name, std::vector<std::string> const& labels) const {
    if (!valid_name(name, true)) throw std::invalid_argument("invalid metric name '" + name + "'");
    for (auto const& l : labels)
        if (!valid_name(l, false) || l.starts_with("__") || l == "le")
            throw std::invalid_argument(name + ": invalid label name '" + l + "'");
    for (auto const& f : families_)
        if (f->name() == name) throw std::invalid_argument("metric '" + name + "' is registered twice");
}

template <class Metric>
family<Metric>& registry::add(std::string name, std::string help, std::vector<std::string> labels,
                              std::size_t max_series, std::vector<double> bounds) {
    std::lock_guard lock(mutex_);
    check_new(name, labels);
    auto f = std::make_unique<family<Metric>>(std::move(name), std::move(help), std::move(labels), max_series,
                                              std::move(bounds));
    auto& ref = *f;
    families_.push_back(std::move(f));
    return ref;
}

family<counter>& registry::add_counter(std::string name, std::string help, std::vector<std::string> labels,
                                       std::size_t max_series) {
    return add<counter>(std::move(name), std::move(help), std::move(labels), max_series, {});
}

family<gauge>& registry::add_gauge(std::string name, std::string help, std::vector<std::string> labels,
                                   std::size_t max_series) {
    return add<gauge>(std::move(name), std::move(help), std::move(labels), max_series, {});
}

family<histogram>& registry::add_histogram(std::string name, std::string help, std::vector<std::string> labels,
                                           std::vector<double> bounds, std::size_t max_series) {
    if (!std::is_sorted(bounds.begin(), bounds.end()) || std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end())
        throw std::invalid_argument(name + ": histogram bounds must be strictly ascending");
    return add<histogram>(std::move(name), std::move(help), std::move(labels), max_series, std::move(bounds));
}

family<sampled_counter>& registry::add_sampled_counter(std::string name, std::string help,
                                                       std::vector<std::string> labels) {
    return add<sampled_counter>(std::move(name), std::move(help), std::move(labels), 1000, {});
}

family<sampled_gauge>& registry::add_sampled_gauge(std::string name, std::string help, std::vector<std::string> labels) {
    return add<sampled_gauge>(std::move(name), std::move(help), std::move(labels), 1000, {});
}

std::string registry::render() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (auto const& f : families_) f->render(out);
    return out;
}

}  // namespace airlock::core::metrics
