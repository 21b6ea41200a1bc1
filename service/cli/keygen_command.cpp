#include "service/cli/keygen_command.hpp"

#include "core/sha256.hpp"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace airlock::service {

namespace {

namespace fs = std::filesystem;

constexpr char keygen_usage[] =
    "usage: airlock keygen --out DIR [--kid KID]\n"
    "  creates an Ed25519 key pair for signing provenance and prints its key id:\n"
    "    DIR/provenance.key  private key, PKCS#8 PEM, mode 0600\n"
    "    DIR/provenance.pub  public key, SubjectPublicKeyInfo PEM (give it to upstream servers)\n"
    "    DIR/provenance.kid  the key id, one line\n"
    "  --kid KID  the key id to sign under (default: \"ed25519-\" + the first 16 hex digits of\n"
    "             SHA-256 of the raw public key)\n"
    "  Existing files are never overwritten: move them away first.\n";

struct pkey_deleter {
    void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
struct bio_deleter {
    void operator()(BIO* b) const noexcept { BIO_free(b); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_deleter>;
using bio_ptr = std::unique_ptr<BIO, bio_deleter>;

// A key file with a passphrase would otherwise make OpenSSL prompt on the terminal.
int refuse_passphrase(char*, int, int, void*) { return -1; }

std::string openssl_reason() {
    unsigned long const e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return "unknown OpenSSL error";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
}

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    long const len = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(len));
}

core::result<std::string> raw_public_key(EVP_PKEY* key) {
    if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) return core::make_error("bad_key", "not an Ed25519 key");
    std::string raw(32, '\0');
    std::size_t len = raw.size();
    if (EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &len) != 1 || len != 32)
        return core::make_error("bad_key", "the Ed25519 public key could not be read: " + openssl_reason());
    return raw;
}

// The private key's PEM is wiped from memory when this goes away, not left for a core dump.
struct secret_text {
    std::string text;
    ~secret_text() { OPENSSL_cleanse(text.data(), text.size()); }
};

// O_EXCL is what makes "never overwrite" hold even when another keygen races us to the same DIR;
// the existence check before it only gives the friendlier message. fchmod because the umask may
// have narrowed the requested mode, and a key file's mode is part of the contract.
core::result<void> write_new_file(fs::path const& path, std::string_view text, mode_t mode) {
    int const fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        int const err = errno;
        if (err == EEXIST)
            return core::make_error("exists", path.string() + " already exists; refusing to overwrite it");
        return core::make_error("io", "cannot create " + path.string() + ": " + std::strerror(err));
    }
    auto fail = [&](char const* what) -> core::result<void> {
        int const err = errno;
        ::close(fd);
        ::unlink(path.c_str());
        return core::make_error("io", std::string("cannot ") + what + " " + path.string() + ": " + std::strerror(err));
    };
    if (::fchmod(fd, mode) != 0) return fail("set the mode of");
    std::size_t done = 0;
    while (done < text.size()) {
        ssize_t const n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("write");
        done += static_cast<std::size_t>(n);
    }
    // A key that vanishes in a crash right after keygen said "done" would strand every block
    // signed with it; the directory is synced by the caller once all three files exist.
    if (::fsync(fd) != 0) return fail("sync");
    if (::close(fd) != 0) {
        int const err = errno;
        ::unlink(path.c_str());
        return core::make_error("io", "cannot close " + path.string() + ": " + std::strerror(err));
    }
    return {};
}

void sync_directory(fs::path const& dir) {
    int const fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

struct key_pair {
    secret_text private_pem;
    std::string public_pem;
    std::string public_raw;
};

core::result<key_pair> generate() {
    pkey_ptr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
    if (!key) return core::make_error("keygen_failed", "Ed25519 key generation failed: " + openssl_reason());
    key_pair out;
    bio_ptr priv(BIO_new(BIO_s_mem()));
    // No cipher: the service reads the key unattended, so file permissions are its protection.
    // For Ed25519 this writes PKCS#8 ("BEGIN PRIVATE KEY"), the form provenance_signer reads.
    if (!priv || PEM_write_bio_PrivateKey(priv.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
        return core::make_error("keygen_failed", "the private key could not be written as PEM: " + openssl_reason());
    out.private_pem.text = bio_text(priv.get());
    bio_ptr pub(BIO_new(BIO_s_mem()));
    if (!pub || PEM_write_bio_PUBKEY(pub.get(), key.get()) != 1)
        return core::make_error("keygen_failed", "the public key could not be written as PEM: " + openssl_reason());
    out.public_pem = bio_text(pub.get());
    auto raw = raw_public_key(key.get());
    if (!raw) return raw.error();
    out.public_raw = std::move(*raw);
    return out;
}

}  // namespace

core::result<std::string> derived_key_id_of_pem(std::string_view pem) {
    auto read = [&](bool as_private) -> pkey_ptr {
        bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
        if (!bio) return nullptr;
        return pkey_ptr(as_private ? PEM_read_bio_PrivateKey(bio.get(), nullptr, refuse_passphrase, nullptr)
                                   : PEM_read_bio_PUBKEY(bio.get(), nullptr, refuse_passphrase, nullptr));
    };
    pkey_ptr key = read(false);
    if (!key) key = read(true);
    ERR_clear_error();  // the failed first attempt queued an error nobody should see later
    if (!key)
        return core::make_error("bad_key", "not a PEM key (expected -----BEGIN PUBLIC KEY-----)");
    auto raw = raw_public_key(key.get());
    if (!raw) return raw.error();
    return derived_key_id(*raw);
}

int run_keygen(std::vector<std::string> const& args) {
    std::optional<std::string> out_dir;
    std::optional<std::string> kid;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto const& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << keygen_usage;
            return 0;
        }
        if ((a == "--out" || a == "--kid") && i + 1 < args.size()) {
            (a == "--out" ? out_dir : kid) = args[++i];
            continue;
        }
        std::cerr << "airlock keygen: unexpected argument '" << a << "'\n" << keygen_usage;
        return 2;
    }
    if (!out_dir || out_dir->empty()) {
        std::cerr << "airlock keygen: --out DIR is required\n" << keygen_usage;
        return 2;
    }
    if (kid) {
        if (auto problem = key_id_problem(*kid); !problem.empty()) {
            std::cerr << "airlock keygen: --kid: " << problem << "\n";
            return 2;
        }
    }

    fs::path const dir(*out_dir);
    fs::path const key_path = dir / "provenance.key";
    fs::path const pub_path = dir / "provenance.pub";
    fs::path const kid_path = dir / "provenance.kid";
    // Checked up front so a refusal leaves nothing half-written; write_new_file's O_EXCL still
    // guards against a file that appears in between.
    for (auto const& p : {key_path, pub_path, kid_path}) {
        std::error_code ec;
        if (fs::exists(fs::symlink_status(p, ec))) {
            std::cerr << "airlock keygen: " << p.string()
                      << " already exists; refusing to overwrite it (move it away or choose another --out)\n";
            return 1;
        }
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        // A new directory that will hold a private key is the owner's alone.
        if (!fs::create_directories(dir, ec) && ec) {
            std::cerr << "airlock keygen: cannot create " << dir.string() << ": " << ec.message() << "\n";
            return 1;
        }
        fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
    }

    auto pair = generate();
    if (!pair) {
        std::cerr << "airlock keygen: " << pair.error().message << "\n";
        return 1;
    }
    std::string const key_id = kid ? *kid : derived_key_id(pair->public_raw);

    std::vector<fs::path> written;
    auto write = [&](fs::path const& p, std::string_view text, mode_t mode) {
        auto r = write_new_file(p, text, mode);
        if (!r) {
            std::cerr << "airlock keygen: " << r.error().message << "\n";
            // All three or none: a lone private key without its id is an accident waiting to happen.
            for (auto const& w : written) fs::remove(w, ec);
            return false;
        }
        written.push_back(p);
        return true;
    };
    if (!write(key_path, pair->private_pem.text, 0600) || !write(pub_path, pair->public_pem, 0644) ||
        !write(kid_path, key_id + "\n", 0644))
        return 1;
    sync_directory(dir);

    std::cerr << "wrote " << key_path.string() << " (private, mode 0600), " << pub_path.string() << " and "
              << kid_path.string() << "\n";
    std::cout << key_id << "\n";
    return 0;
}

}  // namespace airlock::service
