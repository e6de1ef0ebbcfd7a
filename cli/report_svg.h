/* report_svg.h: HTML escaping and inline-SVG plot primitives for `kiln
 * report` (report_svg.c). Every function writes to f. */
#ifndef KILN_REPORT_SVG_H
#define KILN_REPORT_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Series colours. */
extern const char *const KILN_REPORT_PALETTE[8];

/* A plot area: pixel box and data ranges (log10 when lx/ly). */
typedef struct plot {
  double W, H, L, R, T, B; /* svg size and margins (px) */
  double x0, x1, y0, y1;
  bool lx, ly;
} plot;

/* One row of a bar chart: two times (ns, <= 0: none). */
typedef struct bar_row { char label[160]; double a, b; int count; } bar_row;

/* s with <, >, & and " escaped. */
void kiln_report_esc(FILE *f, const char *s);
/* Human time from ns ("-" when not positive) into buf; returns buf. */
const char *kiln_report_fmt_ns(char *buf, size_t n, double ns);
/* Pixel coordinates of data values in p. */
double kiln_report_px(const plot *p, double x);
double kiln_report_py(const plot *p, double y);
/* Widens a log range to whole decades (at least one) and a linear one by 5%. */
void kiln_report_nice_range(double *lo, double *hi, bool lg);
/* Frame, grid, ticks and axis titles; x_ns/y_ns: the values are ns. */
void kiln_report_svg_axes(FILE *f, const plot *p, const char *xt, const char *yt, bool x_ns, bool y_ns);
/* The <svg> element of p, labelled for screen readers. */
void kiln_report_svg_open(FILE *f, const plot *p, const char *label);
/* Legend entry i: a dot of color and text. */
void kiln_report_legend(FILE *f, const plot *p, int i, const char *color, const char *text);
/* Horizontal bars of rows[].a (named na) and rows[].b (nb) on a log scale. */
void kiln_report_plot_bars(FILE *f, const bar_row *rows, int n, const char *title, const char *na, const char *nb);

#endif /* KILN_REPORT_SVG_H */
