/* test_files.h: reading a whole file, for the database tests (db_test.c,
 * db_faults.c) that compare a file's bytes before and after. */
#ifndef KILN_TEST_FILES_H
#define KILN_TEST_FILES_H
#include <stdio.h>
#include <stdlib.h>

/* The bytes of file p (NUL-terminated, malloc'd) and their count in *n;
 * NULL and *n = 0 when it cannot be opened. */
static inline char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) { *n = 0; return NULL; }
  fseek(f, 0, SEEK_END);
  long l = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)(l > 0 ? l : 0) + 1);
  *n = b ? fread(b, 1, (size_t)(l > 0 ? l : 0), f) : 0;
  if (b) b[*n] = 0;
  fclose(f);
  return b;
}
#endif
