// Token files, TLS files from the environment, and the loopback rule
// (credentials.h).
#include "artune/transport/credentials.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace artune::transport {
namespace {

constexpr size_t kMinTokenChars = 16;
constexpr size_t kMaxTokenChars = 4096;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

Result<std::string> ReadPemFile(const std::string& variable) {
  const std::string path = Env(variable.c_str());
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    return Status::InvalidArgument(variable + " names " + path +
                                   ", which cannot be read: check the path and its permissions");
  }
  return text.str();
}

}  // namespace

std::string DefaultTokenPath() {
  if (std::string explicit_path = Env("ARTUNE_TOKEN_FILE"); !explicit_path.empty()) {
    return explicit_path;
  }
  std::string base = Env("XDG_CONFIG_HOME");
  if (base.empty()) base = Env("HOME").empty() ? "." : Env("HOME") + "/.config";
  return base + "/artune/token";
}

Result<std::string> ReadTokenFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return Status::InvalidArgument("token file " + path +
                                   " cannot be opened: " + std::strerror(errno) +
                                   " (create one with `artune serve --listen HOST:PORT`, or "
                                   "set ARTUNE_TOKEN_FILE to a file only you can read)");
  }
  struct stat info {};
  std::string text;
  Status status;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    status = Status::InvalidArgument("token file " + path + " is not a regular file");
  } else if (info.st_uid != ::geteuid()) {
    status = Status::InvalidArgument("token file " + path +
                                     " belongs to another user: use a token file of your own");
  } else if ((info.st_mode & 077) != 0) {
    status = Status::InvalidArgument("token file " + path +
                                     " can be read by other users: chmod 600 " + path);
  } else {
    char buffer[kMaxTokenChars + 64];
    ssize_t got = 0;
    while (got < static_cast<ssize_t>(sizeof(buffer))) {
      const ssize_t n = ::read(fd, buffer + got, sizeof(buffer) - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += n;
    }
    text.assign(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  if (!status.ok()) return status;
  const size_t first = text.find_first_not_of(" \t\r\n");
  const size_t last = text.find_last_not_of(" \t\r\n");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (text.size() < kMinTokenChars || text.size() > kMaxTokenChars) {
    return Status::InvalidArgument("token file " + path + " holds " + std::to_string(text.size()) +
                                   " characters; a token has " + std::to_string(kMinTokenChars) +
                                   " to " + std::to_string(kMaxTokenChars) +
                                   " (remove it and let `artune serve` create one)");
  }
  return text;
}

std::string NewToken() {
  unsigned char random[32];
  // Never short for 32 bytes once the pool is initialised (it blocks until then);
  // EINTR is the one error.
  while (::getrandom(random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
  }
  std::string token;
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char byte : random) {
    token += kHex[byte >> 4];
    token += kHex[byte & 15];
  }
  return token;
}

Result<std::string> CreateTokenFile(const std::string& path) {
  std::error_code error;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::exists(parent, error)) {
    std::filesystem::create_directories(parent, error);
    if (error) {
      return Status::InvalidArgument("cannot create " + parent.string() +
                                     " for the token file: " + error.message());
    }
    ::chmod(parent.c_str(), 0700);
  }
  const std::string token = NewToken();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return Status::AlreadyExists("token file " + path + " already exists");
    return Status::InvalidArgument("cannot create the token file " + path + ": " +
                                   std::strerror(errno));
  }
  const std::string line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced) {
    ::unlink(path.c_str());
    return Status::IoError("cannot write the token file " + path);
  }
  return token;
}

Result<Credentials> CredentialsFromEnvironment() {
  Credentials credentials;
  const std::string path = DefaultTokenPath();
  const bool named = !Env("ARTUNE_TOKEN_FILE").empty();
  std::error_code error;
  if (named || std::filesystem::exists(path, error)) {
    auto token = ReadTokenFile(path);
    if (!token.ok()) return token.status();
    credentials.token = std::move(token).value();
    credentials.token_source = path;
  }
  ARTUNE_ASSIGN_OR_RETURN(credentials.tls_cert_pem, ReadPemFile("ARTUNE_TLS_CERT"));
  ARTUNE_ASSIGN_OR_RETURN(credentials.tls_key_pem, ReadPemFile("ARTUNE_TLS_KEY"));
  ARTUNE_ASSIGN_OR_RETURN(credentials.tls_ca_pem, ReadPemFile("ARTUNE_TLS_CA"));
  if (credentials.tls_cert_pem.empty() != credentials.tls_key_pem.empty()) {
    return Status::InvalidArgument(
        "TLS needs both ARTUNE_TLS_CERT and ARTUNE_TLS_KEY (PEM files), or neither");
  }
  return credentials;
}

bool IsLoopbackHost(const std::string& host) {
  std::string bare = host;
  if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  if (bare == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, bare.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  return ::inet_pton(AF_INET6, bare.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

bool SecretsEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return difference == 0;
}

}  // namespace artune::transport
