/* Reading nbrcoll's line-based text files (node models, machine
 * parameters): '#' starts a comment, blank lines are skipped, a line is
 * whitespace-separated words, some of them key=value. Errors name the line
 * and are returned as NBR_ERR_ARG with the text in the caller's message. */
#ifndef NBR_TEXT_H
#define NBR_TEXT_H

#include <stddef.h>

typedef struct nbr_text_parser {
    const char *next; /* start of the next line */
    int line;
    char buffer[4096];
    char *message;
    size_t message_size;
} nbr_text_parser_t;

static inline nbr_text_parser_t nbr_text_parser(const char *text, char *message, size_t size)
{
    return (nbr_text_parser_t){.next = text, .message = message, .message_size = size};
}

/* "line N: ..." into the message; returns NBR_ERR_ARG. */
int nbr_text_error(nbr_text_parser_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The next line with content (comment and outer blanks stripped, in the
 * parser's buffer), or NULL at the end. */
char *nbr_text_next_line(nbr_text_parser_t *p);
int nbr_text_int(nbr_text_parser_t *p, const char *text, int min, int max, int *value);
/* A number >= 0. */
int nbr_text_double(nbr_text_parser_t *p, const char *text, double *value);
/* Splits a line into at most max words, in place; max + 1 when there are more. */
int nbr_text_split(char *line, char **words, int max);
/* The value of word when it is key=value, else NULL. */
const char *nbr_text_keyed(const char *word, const char *key);
/* The whole file as a string (free it); NBR_ERR_IO / NBR_ERR_ARG with the
 * reason in message. */
int nbr_text_read_file(const char *path, char **text, char *message, size_t size);

#endif
