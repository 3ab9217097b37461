#include "topo/text.h"

#include <ctype.h>
#include <errno.h>
#include <nbrcoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nbr_text_error(nbr_text_parser_t *p, const char *fmt, ...)
{
    char what[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    if (p->message && p->message_size)
        snprintf(p->message, p->message_size, "line %d: %s", p->line, what);
    return NBR_ERR_ARG;
}

char *nbr_text_next_line(nbr_text_parser_t *p)
{
    while (p->next && *p->next) {
        const char *end = strchr(p->next, '\n');
        size_t len = end ? (size_t)(end - p->next) : strlen(p->next);
        if (len >= sizeof p->buffer)
            len = sizeof p->buffer - 1;
        memcpy(p->buffer, p->next, len);
        p->buffer[len] = '\0';
        p->next = end ? end + 1 : NULL;
        p->line++;
        char *hash = strchr(p->buffer, '#');
        if (hash)
            *hash = '\0';
        char *start = p->buffer;
        while (isspace((unsigned char)*start))
            start++;
        char *stop = start + strlen(start);
        while (stop > start && isspace((unsigned char)stop[-1]))
            *--stop = '\0';
        if (*start)
            return start;
    }
    return NULL;
}

int nbr_text_int(nbr_text_parser_t *p, const char *text, int min, int max, int *value)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0')
        return nbr_text_error(p, "'%s' is not an integer", text);
    if (v < min || v > max)
        return nbr_text_error(p, "%ld outside %d..%d", v, min, max);
    *value = (int)v;
    return NBR_SUCCESS;
}

int nbr_text_double(nbr_text_parser_t *p, const char *text, double *value)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end != '\0')
        return nbr_text_error(p, "'%s' is not a number", text);
    if (!(v >= 0))
        return nbr_text_error(p, "%s: negative", text);
    *value = v;
    return NBR_SUCCESS;
}

int nbr_text_split(char *line, char **words, int max)
{
    int n = 0;
    char *at = line;
    for (;;) {
        while (*at == ' ' || *at == '\t')
            *at++ = '\0';
        if (!*at)
            return n;
        if (n == max)
            return max + 1;
        words[n++] = at;
        while (*at && *at != ' ' && *at != '\t')
            at++;
    }
}

const char *nbr_text_keyed(const char *word, const char *key)
{
    size_t len = strlen(key);
    return strncmp(word, key, len) == 0 && word[len] == '=' ? word + len + 1 : NULL;
}

int nbr_text_read_file(const char *path, char **out, char *message, size_t size)
{
    *out = NULL;
    FILE *file = fopen(path, "r");
    if (!file) {
        if (message && size)
            snprintf(message, size, "%s: %s", path, strerror(errno));
        return NBR_ERR_IO;
    }
    size_t capacity = 1 << 16, length = 0;
    char *text = malloc(capacity);
    int rc = text ? NBR_SUCCESS : NBR_ERR_NOMEM;
    while (rc == NBR_SUCCESS) {
        if (length + 1 == capacity) {
            char *grown = capacity < (1u << 24) ? realloc(text, capacity * 2) : NULL;
            if (!grown) {
                if (message && size)
                    snprintf(message, size, "%s: too large", path);
                rc = NBR_ERR_ARG;
                break;
            }
            text = grown;
            capacity *= 2;
        }
        size_t got = fread(text + length, 1, capacity - 1 - length, file);
        length += got;
        if (got == 0)
            break;
    }
    if (rc == NBR_SUCCESS && ferror(file)) {
        if (message && size)
            snprintf(message, size, "%s: read error", path);
        rc = NBR_ERR_IO;
    }
    fclose(file);
    if (rc == NBR_SUCCESS) {
        text[length] = '\0';
        *out = text;
    } else {
        free(text);
    }
    return rc;
}
