/* The tuning report: a table of each case's winner against its fallback, and
 * an SVG plot of the search written by hand (no plotting dependency). */
#include "tune.h"

#include <math.h>
#include <string.h>

void qk_tune_case_label(const qk_tune_case *c, char *out, size_t size) {
    if (c->E)
        snprintf(out, size, "%s %s%s%s m=%u k=%u t=%u e=%u/%u", c->op, c->format,
                 c->format_variant[0] ? "/" : "", c->format_variant, c->M, c->K, c->T, c->E,
                 c->top_k);
    else
        snprintf(out, size, "%s %s%s%s m=%u k=%u t=%u", c->op, c->format,
                 c->format_variant[0] ? "/" : "", c->format_variant, c->M, c->K, c->T);
    const char *act = qk_tune_case_activations(c);
    if (strcmp(act, "f32")) /* the f16-activation case, a case of its own */
        snprintf(out + strlen(out), size - strlen(out), " x=%s", act);
}

double qk_tune_outcome_speedup(const qk_tune_outcome *o) {
    const qk_tune_record *b = o->best, *fb = o->fallback;
    if (!b || !fb) return 0;
    if (strcmp(fb->stage, "full")) b = o->best_screen ? o->best_screen : b;
    return b->us > 0 ? fb->us / b->us : 0;
}

void qk_tune_report_text(FILE *f, const qk_tune_outcome *oc, uint32_t n) {
    fprintf(f, "%-40s %-48s %10s %10s %8s  %s\n", "case", "winner", "us", "fallback", "speedup",
            "candidates (wrong, failed, unsupported)");
    double logsum = 0;
    uint32_t nsp = 0;
    for (uint32_t i = 0; i < n; i++) {
        char label[160];
        qk_tune_case_label(&oc[i].c, label, sizeof label);
        const qk_tune_record *b = oc[i].best, *fb = oc[i].fallback;
        char fbs[32] = "-", sps[32] = "-";
        if (fb) snprintf(fbs, sizeof fbs, "%.2f%s", fb->us, strcmp(fb->stage, "full") ? "s" : "");
        double sp = qk_tune_outcome_speedup(&oc[i]);
        if (sp > 0) {
            snprintf(sps, sizeof sps, "%.2fx", sp);
            logsum += log(sp), nsp++;
        }
        if (b)
            fprintf(f, "%-40s %-48s %9.2f%s %10s %8s  %u (%u, %u, %u)\n", label, b->variant, b->us,
                    strcmp(b->stage, "full") ? "s" : " ", fbs, sps, oc[i].candidates, oc[i].wrong,
                    oc[i].failed, oc[i].unsupported);
        else
            fprintf(f, "%-40s %-48s %10s %10s %8s  %u (%u, %u, %u)\n", label,
                    "(no correct candidate)", "-", fbs, "-", oc[i].candidates, oc[i].wrong,
                    oc[i].failed, oc[i].unsupported);
    }
    if (nsp)
        fprintf(f,
                "geometric mean speedup over the fallback: %.2fx over %u cases "
                "(s: a fallback timed only in the screen, against the winner's screen)\n",
                exp(logsum / nsp), nsp);
}

/* x of a time on the plot's log axis. */
static double xpos(double us, double lo, double hi, double x0, double w) {
    return x0 + w * (log10(us) - log10(lo)) / (log10(hi) - log10(lo));
}

static void svg_text(qk_str *s, double x, double y, const char *anchor, const char *style,
                     const char *text) {
    qk_str_addf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>", x, y, anchor, style);
    qk_xml_text(s, text);
    qk_str_add(s, "</text>\n");
}

/* A mark's tooltip: "<title>NAME: WHAT</title>" and the element's end. */
static void svg_title(qk_str *s, const char *prefix, const char *name, const char *what,
                      const char *end) {
    qk_str_add(s, "><title>");
    qk_xml_text(s, prefix);
    qk_xml_text(s, name);
    qk_xml_text(s, what);
    qk_str_addf(s, "</title></%s>\n", end);
}

void qk_tune_report_svg(qk_str *s, const qk_tune_db *db, const qk_tune_outcome *oc, uint32_t n) {
    const double x0 = 330, w = 560, row = 24, top = 60;
    const double xbad = x0 + w + 30; /* the column of wrong and failed candidates */
    double lo = INFINITY, hi = 0;
    for (uint32_t i = 0; i < db->count; i++)
        if (!strcmp(db->recs[i].status, "ok") && db->recs[i].us > 0)
            lo = fmin(lo, db->recs[i].us), hi = fmax(hi, db->recs[i].us);
    if (!(lo < INFINITY)) lo = 1, hi = 10;
    lo = pow(10, floor(log10(lo))), hi = pow(10, ceil(log10(hi)));
    if (hi <= lo) hi = lo * 10;
    double height = top + row * n + 60;
    qk_str_addf(s,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "font-family=\"sans-serif\" font-size=\"11\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                xbad + 120, height);
    svg_text(s, 10, 20, "start", "font-size=\"14\" font-weight=\"bold\"",
             "qkgen tune: time of every candidate per case (log scale, microseconds)");
    svg_text(s, 10, 38, "start", "fill=\"#444\"",
             "green: winner; blue ring: portable fallback; grey: timed in full; light: screen "
             "only; red x: wrong; orange: failed; grey square: the device cannot run it");
    /* decade grid with 2x and 5x ticks, labelled where there is room */
    const bool crowded = log10(hi / lo) > 3.5;
    for (double d = lo; d <= hi * 1.001; d *= 10)
        for (int m = 1; m <= 5; m += (m == 1 ? 1 : 3)) {
            double v = d * m;
            if (v > hi * 1.001) break;
            double x = xpos(v, lo, hi, x0, w);
            qk_str_addf(s,
                        "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"%s\"/>\n",
                        x, top - 8, x, top + row * n, m == 1 ? "#bbb" : "#eee");
            char t[32];
            snprintf(t, sizeof t, "%.0f", v);
            if (m == 1 || !crowded)
                svg_text(s, x, top + row * n + 16, "middle", "fill=\"#444\"", t);
        }
    svg_text(s, xbad, top - 12, "middle", "fill=\"#444\"", "not timed");
    for (uint32_t i = 0; i < n; i++) {
        double y = top + row * i + row / 2;
        char label[160];
        qk_tune_case_label(&oc[i].c, label, sizeof label);
        svg_text(s, x0 - 10, y + 4, "end", "", label);
        if (i % 2)
            qk_str_addf(s,
                        "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" "
                        "fill=\"#f6f6f6\"/>\n",
                        x0, y - row / 2, w, row);
        uint32_t bad = 0;
        for (uint32_t j = 0; j < db->count; j++) {
            const qk_tune_record *r = &db->recs[j];
            if (!qk_tune_same_device(&r->dev, &oc[i].dev) || !qk_tune_same_case(&r->c, &oc[i].c))
                continue;
            if (!strcmp(r->status, "wrong") || !strcmp(r->status, "failed") ||
                !strcmp(r->status, "unsupported")) {
                double x = xbad - 20 + 4 * (bad++ % 10);
                if (!strcmp(r->status, "unsupported")) {
                    qk_str_addf(s,
                                "<rect x=\"%.1f\" y=\"%.1f\" width=\"4\" height=\"4\" "
                                "fill=\"#999\"",
                                x - 2, y - 2);
                    svg_title(s, "", r->variant, ": unsupported by the device", "rect");
                } else if (!strcmp(r->status, "wrong")) {
                    qk_str_addf(s,
                                "<path d=\"M%.1f %.1fl6 6m0 -6l-6 6\" stroke=\"#d00\" "
                                "stroke-width=\"1.5\"",
                                x - 3, y - 3);
                    svg_title(s, "", r->variant, ": wrong", "path");
                } else {
                    qk_str_addf(s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#f80\"", x, y);
                    svg_title(s, "", r->variant, ": failed", "circle");
                }
                continue;
            }
            if (r->us <= 0) continue;
            bool full = !strcmp(r->stage, "full");
            char what[64];
            snprintf(what, sizeof what, ": %.2f us (%s)", r->us, full ? "full" : "screen");
            qk_str_addf(
                s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" fill-opacity=\"%s\"",
                xpos(r->us, lo, hi, x0, w), y, full ? "#666" : "#aaa", full ? "0.9" : "0.5");
            svg_title(s, "", r->variant, what, "circle");
        }
        if (oc[i].fallback) {
            char what[64];
            snprintf(what, sizeof what, ": %.2f us", oc[i].fallback->us);
            qk_str_addf(s,
                        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"none\" stroke=\"#06c\" "
                        "stroke-width=\"2\"",
                        xpos(oc[i].fallback->us, lo, hi, x0, w), y);
            svg_title(s, "fallback ", oc[i].fallback->variant, what, "circle");
        }
        if (oc[i].best) {
            double x = xpos(oc[i].best->us, lo, hi, x0, w);
            char what[64];
            snprintf(what, sizeof what, ": %.2f us", oc[i].best->us);
            qk_str_addf(s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5.5\" fill=\"#0a0\"", x, y);
            svg_title(s, "winner ", oc[i].best->variant, what, "circle");
            if (qk_tune_outcome_speedup(&oc[i]) > 0) {
                char t[32];
                snprintf(t, sizeof t, "%.2fx", qk_tune_outcome_speedup(&oc[i]));
                svg_text(s, xbad + 45, y + 4, "start", "fill=\"#070\"", t);
            }
        }
    }
    svg_text(s, x0 + w / 2, top + row * n + 34, "middle", "", "microseconds per dispatch");
    svg_text(s, xbad + 45, top - 12, "start", "fill=\"#070\"", "speedup");
    qk_str_add(s, "</svg>\n");
}
