/* Escaping for the languages qkgen writes (C, JSON, SVG/XML): the one function
 * of each that every writer of a name, hash, path or number from a file goes through. */
#include "qk_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (1 .. 4), or 0 where s starts
 * none (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF,
 * or a sequence cut short). */
static size_t utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0; /* also the terminating NUL */
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

bool qk_utf8_valid(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        size_t n = utf8_len(p);
        if (!n) return false;
        p += n;
    }
    return true;
}

void qk_c_string(qk_str *o, const char *s) {
    if (!s) {
        qk_str_add(o, "NULL");
        return;
    }
    qk_str_add(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        /* '?' escaped so that no trigraph forms; octal escapes are always
         * three digits, so a digit after one is never taken into it */
        if (*p == '"' || *p == '\\' || *p == '?')
            qk_str_addf(o, "\\%c", *p);
        else if (*p < 0x20 || *p > 0x7e)
            qk_str_addf(o, "\\%03o", *p);
        else
            qk_str_addn(o, (const char *)p, 1);
    }
    qk_str_add(o, "\"");
}

void qk_c_comment(qk_str *o, const char *s) {
    if (!s) s = "(null)";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        /* neither end nor start a comment ("* /" and "/ *" split), nothing
         * outside printable ASCII (a line break could leave a // comment, a
         * byte of another encoding trouble a compiler) */
        if (*p < 0x20 || *p > 0x7e)
            qk_str_add(o, ".");
        else if ((*p == '*' && p[1] == '/') || (*p == '/' && p[1] == '*'))
            qk_str_addf(o, "%c ", *p);
        else if (*p == '?' && p[1] == '?') /* no trigraph, "??/" least of all */
            qk_str_add(o, "? ");
        else
            qk_str_addn(o, (const char *)p, 1);
    }
}

void qk_json_string(qk_str *o, const char *s) {
    qk_str_add(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        size_t n = utf8_len(p);
        if (*p == '"' || *p == '\\') {
            qk_str_addf(o, "\\%c", *p);
        } else if (*p < 0x20 || *p == 0x7f) {
            qk_str_addf(o, "\\u%04x", *p);
        } else if (n == 0) {
            /* not UTF-8, which JSON text must be: the replacement character
             * (as itself, not escaped, so that writing what was read back
             * gives the same text), so that every reader takes the file */
            qk_str_add(o, "\xef\xbf\xbd");
            n = 1;
        } else {
            qk_str_addn(o, (const char *)p, n);
        }
        p += n ? n : 1;
    }
    qk_str_add(o, "\"");
}

void qk_json_number(qk_str *o, double v) {
    if (!isfinite(v)) {
        qk_str_add(o, "null"); /* JSON has no infinity or NaN */
        return;
    }
    /* the shortest of 15 to 17 significant digits that reads back as v: at
     * most 24 characters ("-1.2345678901234567e-308"), so that no reader's
     * limit on a number's length refuses it */
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    qk_str_add(o, buf);
}

void qk_xml_text(qk_str *o, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        size_t n = utf8_len(p);
        if (*p == '<')
            qk_str_add(o, "&lt;");
        else if (*p == '>')
            qk_str_add(o, "&gt;");
        else if (*p == '&')
            qk_str_add(o, "&amp;");
        else if (*p == '"')
            qk_str_add(o, "&quot;");
        else if (*p == '\'')
            qk_str_add(o, "&apos;");
        else if (n == 0 || (*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f)
            qk_str_add(o, "&#xfffd;"); /* not a character XML 1.0 allows */
        else
            qk_str_addn(o, (const char *)p, n);
        p += n ? n : 1;
    }
}
