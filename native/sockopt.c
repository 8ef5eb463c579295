// The socket calls node:net does not offer, for transparent interception (docs/data-plane.md):
// reading SO_ORIGINAL_DST of an accepted connection, and binding a listening socket with
// IP_TRANSPARENT, IP_FREEBIND or SO_REUSEPORT set before bind(). Only node_api.h, so one build
// loads in every Node version with N-API 8.
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static napi_value throw_errno(napi_env env, const char *call, int err) {
  char message[160];
  snprintf(message, sizeof message, "%s: %s", call, strerror(err));
  napi_value code, msg, error;
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg);
  napi_create_int32(env, err, &code);
  napi_create_error(env, NULL, msg, &error);
  napi_set_named_property(env, error, "errno", code);
  napi_throw(env, error);
  return NULL;
}

static int arg_int(napi_env env, napi_value v, int *out) {
  return napi_get_value_int32(env, v, out) == napi_ok ? 0 : -1;
}

static int arg_bool(napi_env env, napi_value v) {
  bool b = false;
  napi_get_value_bool(env, v, &b);
  return b ? 1 : 0;
}

static napi_value address_object(napi_env env, struct sockaddr_storage *ss) {
  char text[INET6_ADDRSTRLEN] = "";
  int port = 0;
  if (ss->ss_family == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    port = ntohs(in6->sin6_port);
  }
  napi_value obj, address, port_value;
  napi_create_object(env, &obj);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &address);
  napi_create_int32(env, port, &port_value);
  napi_set_named_property(env, obj, "address", address);
  napi_set_named_property(env, obj, "port", port_value);
  return obj;
}

// originalDst(fd): { address, port } the client dialled before a NAT rule (iptables REDIRECT or
// DNAT) sent it here; null where no rule did (the kernel has no conntrack entry for it).
static napi_value original_dst(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int fd;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || arg_int(env, argv[0], &fd) != 0) {
    napi_throw_type_error(env, NULL, "originalDst(fd): fd must be a number");
    return NULL;
  }
  struct sockaddr_storage local;
  socklen_t len = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &len) != 0) return throw_errno(env, "getsockname", errno);
  struct sockaddr_storage dst;
  memset(&dst, 0, sizeof dst);
  len = sizeof dst;
  int rc = local.ss_family == AF_INET6
               ? getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &dst, &len)
               : getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len);
  if (rc != 0) {
    if (errno == ENOENT || errno == ENOPROTOOPT) {
      napi_value none;
      napi_get_null(env, &none);
      return none;
    }
    return throw_errno(env, "getsockopt(SO_ORIGINAL_DST)", errno);
  }
  return address_object(env, &dst);
}

// bindSocket(host, port, transparent, freebind, reusePort): a bound, not yet listening TCP
// socket's fd (non-blocking, close-on-exec) for node:net's listen({ fd }).
static napi_value bind_socket(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char host[INET6_ADDRSTRLEN + 1];
  size_t host_len = 0;
  int port;
  if (argc < 5 || napi_get_value_string_utf8(env, argv[0], host, sizeof host, &host_len) != napi_ok ||
      arg_int(env, argv[1], &port) != 0 || port < 0 || port > 65535) {
    napi_throw_type_error(env, NULL, "bindSocket(host, port, transparent, freebind, reusePort)");
    return NULL;
  }
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  int family;
  struct sockaddr_in *in = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
    family = in->sin_family = AF_INET;
    in->sin_port = htons(port);
    len = sizeof *in;
  } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
    family = in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    len = sizeof *in6;
  } else {
    napi_throw_type_error(env, NULL, "bindSocket: host must be an IPv4 or IPv6 literal");
    return NULL;
  }
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return throw_errno(env, "socket", errno);
  int on = 1;
  const char *failed = NULL;
  // As libuv does for every listening socket.
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) failed = "setsockopt(SO_REUSEADDR)";
  if (!failed && arg_bool(env, argv[2]) &&
      (family == AF_INET ? setsockopt(fd, SOL_IP, IP_TRANSPARENT, &on, sizeof on)
                         : setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &on, sizeof on)) != 0)
    failed = "setsockopt(IP_TRANSPARENT)";
  if (!failed && arg_bool(env, argv[3]) &&
      (family == AF_INET ? setsockopt(fd, SOL_IP, IP_FREEBIND, &on, sizeof on)
                         : setsockopt(fd, SOL_IPV6, IPV6_FREEBIND, &on, sizeof on)) != 0)
    failed = "setsockopt(IP_FREEBIND)";
  if (!failed && arg_bool(env, argv[4]) && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
    failed = "setsockopt(SO_REUSEPORT)";
  if (!failed && bind(fd, (struct sockaddr *)&ss, len) != 0) failed = "bind";
  if (failed) {
    int err = errno;
    close(fd);
    return throw_errno(env, failed, err);
  }
  napi_value result;
  napi_create_int32(env, fd, &result);
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"originalDst", NULL, original_dst, NULL, NULL, NULL, napi_enumerable, NULL},
      {"bindSocket", NULL, bind_socket, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
