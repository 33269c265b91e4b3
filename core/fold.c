#include "fold.h"

#include <stdint.h>
#include <string.h>
#include <unicase.h>
#include <uninorm.h>

#include "util.h"

char *svc_fold(const char *s)
{
    size_t n = strlen(s);
    if (svc_utf8_valid(s, n)) {
        size_t len = 0;
        uint8_t *f = u8_casefold((const uint8_t *)s, n, NULL, UNINORM_NFC, NULL, &len);
        if (f) {
            char *out = svc_xrealloc(f, len + 1);
            out[len] = '\0';
            return out;
        }
    }
    char *out = svc_xstrdup(s);
    for (char *p = out; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return out;
}
