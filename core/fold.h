/* fold: text folded for case-insensitive search in any script (SPEC 4.3 `q`).
 * svc_fold returns s case-folded (Unicode full case folding, libunistring's u8_casefold)
 * and normalised to NFC, so that "WÖRLD", "wörld" and "wo\u0308rld" all fold to the same
 * bytes; a substring test on two folded strings is a case-insensitive match. Invalid UTF-8
 * falls back to ASCII lowercasing of the bytes. Heap result (caller frees), never NULL. */
#ifndef SVC_FOLD_H
#define SVC_FOLD_H

char *svc_fold(const char *s);

#endif
