/* acl: addresses and networks of both families, prefixes that do not end on a byte, IPv4
 * peers of a dual-stack listener, what loopback is, and texts refused. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "acl.h"
#include "tap.h"

/* Whether the peer text (an IPv4 or IPv6 address) is in a. */
static bool in(const struct svc_acl *a, const char *peer)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(peer, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        inet_pton(AF_INET6, peer, &s6->sin6_addr);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        inet_pton(AF_INET, peer, &s4->sin_addr);
    }
    return svc_acl_match(a, (struct sockaddr *)&ss);
}

static void test_match(void)
{
    struct svc_acl a = {0};
    ok(svc_acl_add(&a, "127.0.0.1/32") == 0, "127.0.0.1/32 taken");
    ok(in(&a, "127.0.0.1"), "127.0.0.1 in 127.0.0.1/32");
    ok(!in(&a, "127.0.0.2"), "127.0.0.2 not in 127.0.0.1/32");
    ok(in(&a, "::ffff:127.0.0.1"), "the IPv4-mapped form of 127.0.0.1 is matched as IPv4");
    ok(!in(&a, "::1"), "::1 not in an IPv4 list");
    ok(svc_acl_add(&a, "10.1.2.0/23") == 0 && svc_acl_add(&a, "fd00::/8") == 0,
       "a network of each family");
    ok(in(&a, "10.1.3.255") && !in(&a, "10.1.4.0"), "/23: a prefix off a byte boundary");
    ok(in(&a, "fd12:3456::1") && !in(&a, "fe80::1"), "fd00::/8");
    ok(svc_acl_add(&a, "::ffff:192.168.0.0/112") == 0 && in(&a, "192.168.7.7"),
       "a mapped network matches IPv4 peers");
    ok(svc_acl_beyond_loopback(&a), "a list with 10.1.2.0/23 reaches beyond loopback");
    svc_acl_free(&a);

    struct svc_acl lo = {0};
    svc_acl_add_loopback(&lo);
    ok(in(&lo, "127.9.9.9") && in(&lo, "::1") && !in(&lo, "::2") && !in(&lo, "192.168.1.1"),
       "loopback: 127.0.0.0/8 and ::1 only");
    ok(!svc_acl_beyond_loopback(&lo), "loopback stays within loopback");
    struct sockaddr_un_like {
        sa_family_t family;
    } unix_peer = {AF_UNIX};
    ok(!svc_acl_match(&lo, (struct sockaddr *)(void *)&unix_peer), "no address, no match");
    struct sockaddr_in any = {.sin_family = AF_INET}, lo4 = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &lo4.sin_addr);
    ok(svc_acl_loopback_addr((struct sockaddr *)&lo4) &&
           !svc_acl_loopback_addr((struct sockaddr *)&any),
       "a listener on 127.0.0.1 is loopback, one on 0.0.0.0 is not");
    svc_acl_add(&lo, "0.0.0.0/0");
    ok(svc_acl_beyond_loopback(&lo) && in(&lo, "8.8.8.8"), "0.0.0.0/0 admits every IPv4 peer");
    svc_acl_free(&lo);
}

static void test_refused(void)
{
    static const char *const bad[] = {"",          "localhost",      "10.0.0.0/33", "::/129",
                                      "10.0.0.0/", "10.0.0.0/-1",    "10.0.0",      "1.2.3.4/8x",
                                      "10.0.0.1 ", "web.example.org"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ok(svc_acl_check(bad[i]) != NULL, "refused: '%s'", bad[i]);
    struct svc_acl a = {0};
    ok(svc_acl_add(&a, "nope") == -1 && a.n == 0, "a refused text adds nothing");
    ok(svc_acl_check("::1") == NULL && svc_acl_check("0.0.0.0/0") == NULL, "::1 and 0.0.0.0/0");
    ok(svc_acl_text_loopback("127.0.0.1") && svc_acl_text_loopback("::1") &&
           svc_acl_text_loopback("::ffff:127.0.0.1"),
       "loopback texts");
    ok(!svc_acl_text_loopback("10.0.0.1") && !svc_acl_text_loopback("") &&
           !svc_acl_text_loopback(NULL) && !svc_acl_text_loopback("localhost"),
       "not loopback: another address, empty, a name");
}

int main(void)
{
    test_match();
    test_refused();
    return done_testing();
}
