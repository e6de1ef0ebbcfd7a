/* report_svg.c: the HTML escaping and inline-SVG plot primitives of `kiln
 * report` (cmd_report.c): axes with linear or log ticks, legends, and
 * horizontal bar charts. Plain SVG elements, no script. */
#include "report_svg.h"
#include <math.h>
#include <stdio.h>

#define esc kiln_report_esc
#define fmt_ns kiln_report_fmt_ns
#define px kiln_report_px
#define py kiln_report_py
#define nice_range kiln_report_nice_range
#define svg_open kiln_report_svg_open
#define PALETTE KILN_REPORT_PALETTE

void kiln_report_esc(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

/* Human time from ns. */
const char *kiln_report_fmt_ns(char *buf, size_t n, double ns) {
  if (!(ns > 0)) snprintf(buf, n, "-");
  else if (ns < 1e3) snprintf(buf, n, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, n, "%.3g us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, n, "%.3g ms", ns / 1e6);
  else snprintf(buf, n, "%.3g s", ns / 1e9);
  return buf;
}

const char *const KILN_REPORT_PALETTE[8] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};


double kiln_report_px(const plot *p, double x) {
  double v = p->lx ? log10(x) : x, a = p->lx ? log10(p->x0) : p->x0, b = p->lx ? log10(p->x1) : p->x1;
  return p->L + (b > a ? (v - a) / (b - a) : 0.5) * (p->W - p->L - p->R);
}
double kiln_report_py(const plot *p, double y) {
  double v = p->ly ? log10(y) : y, a = p->ly ? log10(p->y0) : p->y0, b = p->ly ? log10(p->y1) : p->y1;
  return p->H - p->B - (b > a ? (v - a) / (b - a) : 0.5) * (p->H - p->T - p->B);
}

/* Widens a log range to whole decades (at least one) and a linear one by 5%. */
void kiln_report_nice_range(double *lo, double *hi, bool lg) {
  if (!(*hi > *lo)) { *hi = *lo * 2 + (*lo == 0); if (lg) *lo /= 2; }
  if (lg) {
    *lo = pow(10, floor(log10(*lo)));
    *hi = pow(10, ceil(log10(*hi)));
    if (*hi <= *lo) *hi = *lo * 10;
  } else {
    double pad = (*hi - *lo) * 0.05;
    *lo = *lo >= 0 && *lo - pad < 0 ? 0 : *lo - pad;
    *hi += pad;
  }
}

static void axis_label(FILE *f, const plot *p, bool xaxis, double v, const char *unit_ns) {
  char buf[32];
  if (unit_ns) fmt_ns(buf, sizeof buf, v);
  else if (fabs(v) >= 1e9) snprintf(buf, sizeof buf, "%gG", v / 1e9);
  else if (fabs(v) >= 1e6) snprintf(buf, sizeof buf, "%gM", v / 1e6);
  else if (fabs(v) >= 1e3) snprintf(buf, sizeof buf, "%gk", v / 1e3);
  else if (fabs(v) < 1e-2 && v != 0) snprintf(buf, sizeof buf, "%.0e", v);
  else snprintf(buf, sizeof buf, "%g", v);
  if (xaxis) fprintf(f, "<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>%s</text>", px(p, v), p->H - p->B + 14, buf);
  else fprintf(f, "<text x='%.1f' y='%.1f' class='tick' text-anchor='end'>%s</text>", p->L - 4, py(p, v) + 4, buf);
}

/* Frame, grid, ticks and axis titles. unit_x/unit_y non-NULL: values are ns. */
void kiln_report_svg_axes(FILE *f, const plot *p, const char *xt, const char *yt, bool x_ns, bool y_ns) {
  fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' class='frame'/>", p->L, p->T, p->W - p->L - p->R, p->H - p->T - p->B);
  for (int ax = 0; ax < 2; ax++) {
    bool lg = ax == 0 ? p->lx : p->ly;
    double a = ax == 0 ? p->x0 : p->y0, b = ax == 0 ? p->x1 : p->y1;
    int nt = 0;
    double ticks[64];
    if (lg) {
      double step = log10(b) - log10(a) > 8 ? 2 : 1;
      for (double e = ceil(log10(a) - 1e-9); e <= log10(b) + 1e-9 && nt < 64; e += step) ticks[nt++] = pow(10, e);
    } else {
      double span = b - a, mag = pow(10, floor(log10(span > 0 ? span : 1))), st = mag;
      if (span / st < 3) st = mag / 2;
      if (span / st < 3) st = mag / 5;
      for (double v = ceil(a / st) * st; v <= b + st * 1e-9 && nt < 64; v += st) ticks[nt++] = v;
    }
    for (int i = 0; i < nt; i++) {
      if (ax == 0) {
        fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' class='grid'/>", px(p, ticks[i]), px(p, ticks[i]), p->T, p->H - p->B);
        axis_label(f, p, true, ticks[i], x_ns ? "ns" : NULL);
      } else {
        fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' class='grid'/>", p->L, p->W - p->R, py(p, ticks[i]), py(p, ticks[i]));
        axis_label(f, p, false, ticks[i], y_ns ? "ns" : NULL);
      }
    }
  }
  fprintf(f, "<text x='%.1f' y='%.1f' class='axis' text-anchor='middle'>", (p->L + p->W - p->R) / 2, p->H - 4);
  esc(f, xt);
  fprintf(f, "</text><text transform='translate(12,%.1f) rotate(-90)' class='axis' text-anchor='middle'>", (p->T + p->H - p->B) / 2);
  esc(f, yt);
  fputs("</text>", f);
}

void kiln_report_svg_open(FILE *f, const plot *p, const char *label) {
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' viewBox='0 0 %.0f %.0f' role='img' aria-label='", p->W, p->H, p->W, p->H);
  esc(f, label);
  fputs("'>", f);
}

void kiln_report_legend(FILE *f, const plot *p, int i, const char *color, const char *text) {
  double x = p->L + 8, y = p->T + 14 + 14 * i;
  fprintf(f, "<circle cx='%.1f' cy='%.1f' r='4' fill='%s'/><text x='%.1f' y='%.1f' class='legend'>", x, y - 4, color, x + 8, y);
  esc(f, text);
  fputs("</text>", f);
}


void kiln_report_plot_bars(FILE *f, const bar_row *rows, int n, const char *title, const char *na, const char *nb) {
  if (n <= 0) return;
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < n; i++) {
    if (rows[i].a > 0) { lo = fmin(lo, rows[i].a); hi = fmax(hi, rows[i].a); }
    if (rows[i].b > 0) { lo = fmin(lo, rows[i].b); hi = fmax(hi, rows[i].b); }
  }
  if (!(hi > 0)) return;
  nice_range(&lo, &hi, true);
  double rowh = 22;
  plot p = {.W = 900, .L = 330, .R = 70, .T = 26, .B = 36, .lx = true, .x0 = lo, .x1 = hi, .y0 = 0, .y1 = 1};
  p.H = p.T + p.B + rowh * n;
  svg_open(f, &p, title);
  fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' class='frame'/>", p.L, p.T, p.W - p.L - p.R, p.H - p.T - p.B);
  for (double e = log10(lo); e <= log10(hi) + 1e-9; e += 1) {
    double x = px(&p, pow(10, e));
    char b[32];
    fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' class='grid'/>", x, x, p.T, p.H - p.B);
    fprintf(f, "<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>%s</text>", x, p.H - p.B + 14, fmt_ns(b, sizeof b, pow(10, e)));
  }
  fprintf(f, "<text x='%.1f' y='%.1f' class='axis' text-anchor='middle'>time (log scale)</text>", (p.L + p.W - p.R) / 2, p.H - 4);
  fprintf(f, "<rect x='%.1f' y='6' width='10' height='10' fill='%s'/><text x='%.1f' y='15' class='legend'>", p.L, "#9aa5b1", p.L + 14);
  esc(f, na);
  fprintf(f, "</text><rect x='%.1f' y='6' width='10' height='10' fill='%s'/><text x='%.1f' y='15' class='legend'>", p.L + 170, PALETTE[2], p.L + 184);
  esc(f, nb);
  fputs("</text>", f);
  for (int i = 0; i < n; i++) {
    double y = p.T + rowh * i;
    char a[32], b[32];
    fprintf(f, "<text x='%.1f' y='%.1f' class='rowlabel' text-anchor='end'>", p.L - 6, y + 15);
    esc(f, rows[i].label);
    fputs("</text>", f);
    if (rows[i].a > 0)
      fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='8' fill='#9aa5b1'><title>%s: %s</title></rect>", p.L, y + 3,
              fmax(1, px(&p, rows[i].a) - p.L), na, fmt_ns(a, sizeof a, rows[i].a));
    if (rows[i].b > 0)
      fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='8' fill='%s'><title>%s: %s</title></rect>", p.L, y + 11,
              fmax(1, px(&p, rows[i].b) - p.L), PALETTE[2], nb, fmt_ns(b, sizeof b, rows[i].b));
    if (rows[i].a > 0 && rows[i].b > 0)
      fprintf(f, "<text x='%.1f' y='%.1f' class='tick'>%.2fx</text>", p.W - p.R + 6, y + 15, rows[i].a / rows[i].b);
  }
  fputs("</svg>", f);
}

