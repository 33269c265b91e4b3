/* tar: the streaming writer read back by the refusing reader (and by the system tar), long
 * paths through pax headers, big and empty members, and path normalization. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "tar.h"

static int to_file(void *ctx, const void *data, size_t len)
{
    return fwrite(data, 1, len, ctx) == len ? 0 : -1;
}

/* An output that takes limit bytes, then fails (a client gone, a full disk). */
struct capped {
    size_t limit, got;
};

static int capped_out(void *ctx, const void *data, size_t len)
{
    struct capped *c = ctx;
    (void)data;
    if (c->got + len > c->limit)
        return -1;
    c->got += len;
    return 0;
}

/* Incompressible bytes through a writer whose output fails after 100 KB: an error, not a
 * hang, and the writer freed with or without finish. */
static void failing_output(void)
{
    size_t n = 4 * 1024 * 1024;
    unsigned char *data = malloc(n);
    unsigned x = 12345;
    for (size_t i = 0; i < n; i++)
        data[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    for (int finish = 0; finish < 2; finish++) {
        struct capped c = {.limit = 100 * 1024};
        struct svc_tarw *w = NULL;
        struct svc_err err;
        ok(svc_tarw_new(capped_out, &c, &w, &err) == 0, "writer to a failing output");
        int rc = svc_tarw_file_begin(w, "big", n, 0, &err);
        for (size_t off = 0; rc == 0 && off < n; off += 65536)
            rc = svc_tarw_data(w, data + off, 65536, &err);
        if (rc == 0)
            rc = svc_tarw_file_end(w, &err);
        if (rc == 0 && finish)
            rc = svc_tarw_finish(w, &err);
        if (finish || rc != 0) {
            ok(rc != 0, "the failed output is an error (%s)",
               finish ? "by finish" : "while writing");
            is_str(err.message, "archive output failed", "named as the output's");
        }
        ok(c.got <= c.limit, "nothing written past the failure");
        svc_tarw_free(w); /* returns: the compressor thread has stopped */
        ok(1, "freed %s finish", finish ? "after" : "without");
    }
    free(data);
}

static int add_file(struct svc_tarw *w, const char *path, const char *data, size_t len)
{
    struct svc_err err;
    if (svc_tarw_file_begin(w, path, len, 1700000000, &err) != 0)
        return -1;
    /* in uneven pieces, as a spool is copied */
    for (size_t off = 0; off < len;) {
        size_t n = len - off < 777 ? len - off : 777;
        if (svc_tarw_data(w, data + off, n, &err) != 0)
            return -1;
        off += n;
    }
    return svc_tarw_file_end(w, &err);
}

int main(void)
{
    char dir[] = "/tmp/svc-tar-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[256];
    snprintf(path, sizeof path, "%s/t.tar.gz", dir);
    FILE *f = fopen(path, "wb");
    struct svc_tarw *w = NULL;
    struct svc_err err;
    ok(svc_tarw_new(to_file, f, &w, &err) == 0, "writer");
    char longp[400];
    memset(longp, 0, sizeof longp);
    strcpy(longp, "top/native/session_");
    memset(longp + strlen(longp), 'x', 128);
    strcat(longp, "/agents/agent_");
    memset(longp + strlen(longp), 'y', 128);
    strcat(longp, "/messages/message_12.json");
    size_t big = 300000;
    char *bigdata = malloc(big);
    for (size_t i = 0; i < big; i++)
        bigdata[i] = (char)(i * 7 + i / 1000);
    ok(svc_tarw_dir(w, "top", 0, &err) == 0, "dir member");
    ok(add_file(w, "top/a.json", "{\"a\": 1}", 8) == 0, "short file");
    ok(add_file(w, "top/empty", "", 0) == 0, "empty file");
    ok(add_file(w, longp, "long", 4) == 0, "path of %zu bytes (pax)", strlen(longp));
    ok(add_file(w, "top/big.bin", bigdata, big) == 0, "300 KB file");
    ok(svc_tarw_file_begin(w, "top/short", 5, 0, &err) == 0 &&
           svc_tarw_data(w, "abc", 3, &err) == 0 && svc_tarw_file_end(w, &err) != 0,
       "a member shorter than declared is an error");
    ok(svc_tarw_data(w, "de", 2, &err) == 0 && svc_tarw_file_end(w, &err) == 0, "then completed");
    ok(svc_tarw_finish(w, &err) == 0, "finish");
    ok(svc_tarw_bytes(w) > 0, "compressed bytes counted");
    svc_tarw_free(w);
    fclose(f);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "gunzip -t %s && tar -tzf %s | grep -c . > %s/list", path, path, dir);
    ok(system(cmd) == 0, "gunzip -t and the system tar read it");

    struct svc_tarr *r = NULL;
    ok(svc_tarr_open(path, &r, &err) == 0, "reader");
    struct svc_tar_member m;
    const char *want[] = {"top", "top/a.json", "top/empty", longp, "top/big.bin", "top/short"};
    int n = 0, rc;
    char *buf = malloc(big + 1);
    while ((rc = svc_tarr_next(r, &m, &err)) == 1 && n < 6) {
        is_str(m.path, want[n], "member %d path", n);
        size_t got = 0;
        long k;
        while ((k = svc_tarr_read(r, buf + got, 1000, &err)) > 0)
            got += (size_t)k;
        if (n == 1)
            ok(got == 8 && memcmp(buf, "{\"a\": 1}", 8) == 0, "short file data");
        if (n == 3)
            ok(got == 4 && memcmp(buf, "long", 4) == 0, "long-path file data");
        if (n == 4)
            ok(got == big && memcmp(buf, bigdata, big) == 0, "big file data");
        if (n == 0)
            ok(m.type == SVC_TAR_DIR, "a directory");
        n++;
    }
    is_int(rc, 0, "end of archive");
    is_int(n, 6, "six members");
    svc_tarr_close(r);

    char p1[] = "./a//b/", p2[] = "../x", p3[] = "/abs", p4[] = "a/../b", p5[] = "a/./b",
         p6[] = "a/..", p7[] = "..a/b..";
    ok(svc_tar_path_normalize(p1) && strcmp(p1, "a/b") == 0, "./a//b/ -> a/b");
    ok(!svc_tar_path_normalize(p2), "../x refused");
    ok(!svc_tar_path_normalize(p3), "/abs refused");
    ok(!svc_tar_path_normalize(p4), "a/../b refused");
    ok(svc_tar_path_normalize(p5) && strcmp(p5, "a/b") == 0, "a/./b -> a/b");
    ok(!svc_tar_path_normalize(p6), "a/.. refused");
    ok(svc_tar_path_normalize(p7) && strcmp(p7, "..a/b..") == 0, "names that merely contain dots");

    /* a damaged stream is an error, not a crash */
    FILE *g = fopen(path, "r+b");
    fseek(g, 40, SEEK_SET);
    fputs("garbage garbage", g);
    fclose(g);
    ok(svc_tarr_open(path, &r, &err) == 0, "reopen damaged");
    while ((rc = svc_tarr_next(r, &m, &err)) == 1)
        while (svc_tarr_read(r, buf, 1000, &err) > 0)
            ;
    is_int(rc, -1, "a damaged gzip stream is an error: %s", err.message);
    svc_tarr_close(r);
    free(buf);
    free(bigdata);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    failing_output();
    return done_testing();
}
