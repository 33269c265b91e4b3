#include "acl.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* An IPv4-mapped IPv6 network as the IPv4 one it is. */
static void unmap(struct svc_acl_net *n)
{
    if (n->family == AF_INET6 && n->bits >= 96 && memcmp(n->addr, v4mapped, 12) == 0) {
        memmove(n->addr, n->addr + 12, 4);
        memset(n->addr + 4, 0, 12);
        n->family = AF_INET;
        n->bits -= 96;
    }
}

/* text into *n: NULL, or what is wrong. */
static const char *parse(const char *text, struct svc_acl_net *n)
{
    char host[INET6_ADDRSTRLEN + 1];
    const char *slash = strchr(text, '/');
    size_t hl = slash ? (size_t)(slash - text) : strlen(text);
    if (hl == 0 || hl >= sizeof host)
        return "not an IPv4 or IPv6 address or network (e.g. 10.0.0.5, 10.0.0.0/24, fd00::/8)";
    memcpy(host, text, hl);
    host[hl] = '\0';
    memset(n, 0, sizeof *n);
    n->family = strchr(host, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(n->family, host, n->addr) != 1)
        return "not an IPv4 or IPv6 address or network (e.g. 10.0.0.5, 10.0.0.0/24, fd00::/8); "
               "names are not taken";
    int max = n->family == AF_INET ? 32 : 128;
    n->bits = max;
    if (slash) {
        const char *b = slash + 1;
        size_t bl = strlen(b);
        if (bl == 0 || bl > 3 || strspn(b, "0123456789") != bl || atoi(b) > max)
            return n->family == AF_INET ? "the prefix length after '/' must be 0..32"
                                        : "the prefix length after '/' must be 0..128";
        n->bits = atoi(b);
    }
    unmap(n);
    return NULL;
}

const char *svc_acl_check(const char *text)
{
    struct svc_acl_net n;
    return parse(text, &n);
}

int svc_acl_add(struct svc_acl *a, const char *text)
{
    struct svc_acl_net n;
    if (parse(text, &n))
        return -1;
    a->nets = svc_xrealloc(a->nets, (a->n + 1) * sizeof *a->nets);
    a->nets[a->n++] = n;
    return 0;
}

void svc_acl_add_loopback(struct svc_acl *a)
{
    svc_acl_add(a, "127.0.0.0/8");
    svc_acl_add(a, "::1");
}

/* Whether the first bits of x and y agree. */
static bool prefix_eq(const unsigned char *x, const unsigned char *y, int bits)
{
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(x, y, (size_t)whole) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (x[whole] & mask) == (y[whole] & mask);
}

/* The peer sa as a host entry; false for a family without addresses. */
static bool host_of(const struct sockaddr *sa, struct svc_acl_net *h)
{
    memset(h, 0, sizeof *h);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        memcpy(h->addr, &in->sin_addr, 4);
        h->family = AF_INET;
        h->bits = 32;
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        memcpy(h->addr, &in6->sin6_addr, 16);
        h->family = AF_INET6;
        h->bits = 128;
        unmap(h);
    } else {
        return false;
    }
    return true;
}

bool svc_acl_match(const struct svc_acl *a, const struct sockaddr *sa)
{
    struct svc_acl_net h;
    if (!host_of(sa, &h))
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->nets[i].family == h.family && prefix_eq(a->nets[i].addr, h.addr, a->nets[i].bits))
            return true;
    return false;
}

static bool loopback_net(const struct svc_acl_net *n)
{
    static const unsigned char one[16] = {[15] = 1};
    if (n->family == AF_INET)
        return n->bits >= 8 && n->addr[0] == 127;
    return n->bits == 128 && memcmp(n->addr, one, 16) == 0;
}

bool svc_acl_beyond_loopback(const struct svc_acl *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (!loopback_net(&a->nets[i]))
            return true;
    return false;
}

bool svc_acl_loopback_addr(const struct sockaddr *sa)
{
    struct svc_acl_net h;
    return host_of(sa, &h) && loopback_net(&h);
}

bool svc_acl_text_loopback(const char *text)
{
    struct svc_acl_net n;
    return text && *text && !strchr(text, '/') && !parse(text, &n) && loopback_net(&n);
}

void svc_acl_free(struct svc_acl *a)
{
    free(a->nets);
    a->nets = NULL;
    a->n = 0;
}
