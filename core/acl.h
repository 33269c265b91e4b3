/* acl: lists of IPv4 and IPv6 addresses and networks ("127.0.0.1", "10.0.0.0/8", "::1",
 * "fd00::/8"), as server.fcgi_allow and FCGI_WEB_SERVER_ADDRS give them (SPEC 19), and
 * whether a peer is in one. An address without "/bits" is that one host. An IPv4-mapped
 * IPv6 peer (::ffff:a.b.c.d, what a dual-stack listener reports) is matched as IPv4. No
 * names: a list never waits for DNS. svc_acl_free releases what svc_acl_add allocated. */
#ifndef SVC_ACL_H
#define SVC_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct svc_acl {
    struct svc_acl_net {
        int family; /* AF_INET or AF_INET6 */
        unsigned char addr[16];
        int bits;
    } * nets;
    size_t n;
};

/* NULL when text is an address or network, else what is wrong with it (a config check). */
const char *svc_acl_check(const char *text);
/* Add text to a: 0, or -1 when svc_acl_check refuses it (a is unchanged). */
int svc_acl_add(struct svc_acl *a, const char *text);
/* The loopback networks, 127.0.0.0/8 and ::1. */
void svc_acl_add_loopback(struct svc_acl *a);
/* Whether the peer address sa is in a (an AF_UNIX peer never is). */
bool svc_acl_match(const struct svc_acl *a, const struct sockaddr *sa);
/* Whether a admits some address outside loopback. */
bool svc_acl_beyond_loopback(const struct svc_acl *a);
/* Whether sa, or text (never a name), is a loopback address. */
bool svc_acl_loopback_addr(const struct sockaddr *sa);
bool svc_acl_text_loopback(const char *text);
void svc_acl_free(struct svc_acl *a);

#endif
