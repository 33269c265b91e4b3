// import_fuzz: libFuzzer harness for `svc import` (core/import.c, core/tar.c). The input's
// first byte chooses how the rest is fed: 0 as a .tar.gz bundle file as it is, 1 as a tar
// stream the harness gzips first (so mutations reach the tar reader), 2 as the manifest.json
// of a bundle directory whose other files are the committed t/fuzz/import-bundle/ (one real
// session); bit 2 imports with overwrite (into a root that already holds that session),
// bit 3 is a dry run. Every input must import or be refused cleanly, never crash or leak,
// and nothing may be written outside the root: after each import the work directory must
// hold only the root and the bundle. Everything lives on
// /dev/shm when there is one (speed).
// Built by `make fuzz` (build-fuzz/import_fuzz); run from the top directory:
//   build-fuzz/import_fuzz -max_total_time=600 t/fuzz/corpus/import
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "config.h"
#include "fsio.h"
#include "import.h"

#include "sandbox.h"

static struct svc_config cfg;
static char work[256], root[300], bdir[300], btar[300], tmpl[300];

static void die(const char *what)
{
    fprintf(stderr, "import_fuzz: %s\n", what);
    abort();
}

static void write_file(const char *path, const void *p, size_t n)
{
    if (svc_file_write_atomic(path, p, n, false, NULL) != 0)
        die("cannot write the bundle");
}

/* Copy a tree of directories and regular files. */
static void copy_tree(const char *from, const char *to)
{
    if (mkdir(to, 0755) != 0)
        die("cannot create a directory");
    DIR *d = opendir(from);
    if (!d)
        die("cannot read the template bundle (run from the top directory)");
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char a[1024], b[1024];
        snprintf(a, sizeof a, "%s/%s", from, de->d_name);
        snprintf(b, sizeof b, "%s/%s", to, de->d_name);
        struct stat sb;
        if (lstat(a, &sb) != 0)
            die("stat");
        if (S_ISDIR(sb.st_mode)) {
            copy_tree(a, b);
        } else {
            char *buf = NULL;
            size_t len = 0;
            if (svc_file_read(a, &buf, &len, NULL) != 0)
                die("cannot read a template file");
            write_file(b, buf, len);
            free(buf);
        }
    }
    closedir(d);
}

static void setup(void)
{
    snprintf(work, sizeof work, "%s", fuzz_sandbox("import"));
    snprintf(bdir, sizeof bdir, "%s/bundle", work);
    snprintf(btar, sizeof btar, "%s/bundle.tar.gz", work);
    snprintf(tmpl, sizeof tmpl, "%s/template", work);
    const char *src = getenv("SVC_FUZZ_BUNDLE");
    copy_tree(src && *src ? src : "t/fuzz/import-bundle", tmpl);
    svc_config_defaults(&cfg, NULL);
    fuzz_sandbox_config(&cfg, root, sizeof root);
}

/* Every entry of the work directory must be one we made. */
static void check_work(void)
{
    DIR *d = opendir(work);
    if (!d)
        die("work directory gone");
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (strcmp(n, ".") && strcmp(n, "..") && strcmp(n, "root") && strcmp(n, "bundle") &&
            strcmp(n, "bundle.tar.gz") && strcmp(n, "template")) {
            fprintf(stderr, "import_fuzz: %s/%s was written outside the root\n", work, n);
            abort();
        }
    }
    closedir(d);
}

static void gzip_file(const char *path, const uint8_t *p, size_t n)
{
    gzFile gz = gzopen(path, "wb1");
    if (!gz)
        die("gzopen");
    if (n > 0 && gzwrite(gz, p, (unsigned)n) != (int)n)
        die("gzwrite");
    gzclose(gz);
}

static void count_one(void *ctx, const char *sid, const char *reason)
{
    (void)sid;
    (void)reason;
    (*(size_t *)ctx)++;
}

static void import_once(const char *bundle, bool overwrite, bool dry)
{
    struct svc_import_options opt = {.overwrite = overwrite, .dry_run = dry};
    struct svc_import_report rep;
    struct svc_err err;
    size_t n = 0;
    if (svc_import(&cfg, bundle, &opt, &rep, &err) == 0) {
        if (!rep.tab)
            die("import answered 0 without a report");
        svc_import_each(&rep, SVC_IMPORT_FAILED, count_one, &n, &err);
        if (n != rep.failed)
            die("the failed sessions read back are not those counted");
    } else if (rep.tab) {
        die("a refused import left a report");
    }
    svc_import_report_free(&rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer calls it */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg.sessions.root)
        setup();
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    bool overwrite = data[0] & 4, dry = data[0] & 8;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    svc_file_remove_tree(root);
    svc_file_remove_tree(bdir);
    unlink(btar);
    if (overwrite) /* the template's session is already there: it is swapped */
        import_once(tmpl, false, false);
    const char *bundle;
    if (mode == 0) {
        write_file(btar, p, n);
        bundle = btar;
    } else if (mode == 1) {
        gzip_file(btar, p, n);
        bundle = btar;
    } else {
        copy_tree(tmpl, bdir);
        char mp[400];
        snprintf(mp, sizeof mp, "%s/manifest.json", bdir);
        write_file(mp, p, n);
        bundle = bdir;
    }
    import_once(bundle, overwrite, dry);
    check_work();
    return 0;
}
