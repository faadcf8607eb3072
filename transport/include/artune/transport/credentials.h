// Who may use a transport server, and how a client proves it.
//
// A server that has a token authenticates everything: every control-plane call
// (Handshake, GetStats, Reconfigure) must carry it, and a data connection is
// admitted only with the one-time ticket an authenticated Handshake issued (single
// use, bound to that server, valid for kTicketLifetime). A server may listen on a
// non-loopback address only with a token (Server::Start refuses otherwise): on a
// shared cluster, loopback is the default and anything wider is authenticated.
//
// A loopback server without a token serves only its own user and root (issue 26:
// another local user could `apply config --live` it). Each of its listeners
// checks the peer's user when it accepts a connection: the control plane and the
// tcp data listener look up the owner of the peer socket with the kernel's
// sock_diag (the accepted socket's 4-tuple reversed, same network namespace),
// the shm listener asks SO_PEERCRED (its own uid only, as before at the hello);
// another user's connection is closed at once, before gRPC or the wire protocol
// reads a byte of it. A verbs data connection cannot be traced to a user; its
// one-time ticket still comes from a control plane that checked.
//   Why the peer's uid and not a token on loopback too: it costs the user
// nothing (no file to create, copy or pass to every tool), it is the boundary
// the kernel already enforces between users, and it holds for every process of
// the user, which is exactly who may already read the user's token file. Root is
// admitted: it can become any user, read any token and ptrace any process, so
// refusing it protects nothing and would only stop `sudo artune apply --live`.
// A server that wants other users (or hosts) gives itself a token.
//
// Secrets are not knobs: they never pass through the knob table, the TOML config,
// ARTUNE_<KNOB> variables, the command line or the store. The token lives in a file
// that only its owner may read (0600); ARTUNE_TOKEN_FILE names it, else
// $XDG_CONFIG_HOME/artune/token (~/.config/artune/token) is used when it exists.
// Both ends of a link read the same token (copy the file to the peer's host, as
// with an ssh key).
//
// Without TLS the token crosses the network in the clear, like a password over
// plain TCP: on a network others can watch, also give the control plane TLS
// (ARTUNE_TLS_CERT + ARTUNE_TLS_KEY on the server, ARTUNE_TLS_CA on clients: PEM
// files). TLS covers the gRPC control plane; the data fabric's payload is not
// encrypted (tcp) or is RDMA (verbs), as with UCX and perftest.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "artune/status.h"

namespace artune::transport {

inline constexpr std::chrono::seconds kTicketLifetime{60};
// The gRPC metadata key that carries the token on every control-plane call (and on
// the calls of `artune serve`'s stock-gRPC bench server).
inline constexpr std::string_view kTokenMetadataKey = "artune-token";

struct Credentials {
  // The shared secret; empty: none (the server admits anyone who reaches it,
  // which Server::Start allows on loopback only).
  std::string token;
  // PEM contents (not paths). Server: cert + key turn TLS on. Client: ca turns
  // TLS on and is the root it trusts.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string tls_ca_pem;
  // Where the token came from, for messages ("" when none); never the token.
  std::string token_source;

  bool has_token() const { return !token.empty(); }
  bool server_tls() const { return !tls_cert_pem.empty(); }
  bool client_tls() const { return !tls_ca_pem.empty(); }
};

// The default path of the token file: $ARTUNE_TOKEN_FILE, else
// $XDG_CONFIG_HOME/artune/token, else $HOME/.config/artune/token.
std::string DefaultTokenPath();

// Reads a token file. Errors (kInvalidArgument, saying what to do): unreadable, a
// group- or world-readable file, a file of another user, fewer than 16 or more
// than 4096 characters after trimming white space.
Result<std::string> ReadTokenFile(const std::string& path);

// A new random token: 32 bytes from the kernel's CSPRNG, as 64 hex digits. For
// servers and clients of one process (the tools' in-process benchmarks on an RDMA
// netdev) it never needs a file.
std::string NewToken();

// Creates `path` (and its directory, 0700) holding NewToken(), mode 0600, never
// replacing an existing file (kAlreadyExists then). Returns the token.
Result<std::string> CreateTokenFile(const std::string& path);

// The credentials from the environment: the token file above (an error when
// ARTUNE_TOKEN_FILE names a file that cannot be used; no token when the default
// path does not exist) and the TLS files ARTUNE_TLS_CERT, ARTUNE_TLS_KEY,
// ARTUNE_TLS_CA. Server::Start and Client::Connect use these when given none.
Result<Credentials> CredentialsFromEnvironment();

// True for 127.0.0.0/8, ::1 and "localhost": addresses only this host reaches.
bool IsLoopbackHost(const std::string& host);

// Compares two secrets in time that depends on their lengths only.
bool SecretsEqual(const std::string& a, const std::string& b);

}  // namespace artune::transport
