#!/usr/bin/env python3
"""The issue-26 target from bench/tune-gpu.sh's output folder: per case the
tune's pick (its fastest correct kernel timed in full) against the best of the
exhaustive bench over the same candidates, and both commands' times.

usage: python3 bench/tune_compare.py OUT"""
import glob, gzip, json, os, re, sys

import benchjson


FAMILY = {'matvec': 'matvec', 'moe': 'matvec_id', 'matmul': 'matmul', 'moe_matmul': 'matmul_id'}
# the part of the standard set each of tune-gpu.sh's case families is in
PART = {'matvec': 'decode', 'moe': 'moe', 'matmul': 'prefill', 'moe_matmul': 'prefill'}


def compare(out):
    """Per case of OUT (in times.txt's order, sorted): a dict with name, part,
    format, the tune's pick, its time in the exhaustive run (pick_us), the
    exhaustive best (best_us), their ratio and both commands' seconds; or,
    for a case without its bench or tune, name and missing."""
    times = {}
    for line in open(os.path.join(out, 'times.txt')):
        f = line.split()
        times[f[0]] = (float(f[2]), float(f[6]))
    tune = {}
    # the databases, as tune-gpu.sh wrote them or gzipped
    for path in glob.glob(os.path.join(out, 'tune-*.jsonl*')):
        for line in (gzip.open if path.endswith('.gz') else open)(path, 'rt'):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            c = r['case']
            key = (c['op'], c['format'], c['M'], c['K'], c['T'], c['E'])
            if r['status'] == 'ok' and r['stage'] == 'full' and r['us'] > 0:
                if key not in tune or r['us'] < tune[key][1]:
                    tune[key] = (r['variant'], r['us'])
    rows = []
    for name in sorted(times):
        m = re.match(r'(\w+?)-(.+)-m(\d+)-k(\d+)-t(\d+)(?:-e(\d+))?$', name)
        f, fmt, M, K, T, E = m.groups()
        key = (FAMILY[f], fmt, int(M), int(K), int(T), int(E or 0))
        path = benchjson.path(os.path.join(out, 'bench-%s.json' % name))
        if not path or key not in tune:
            rows.append({'name': name, 'missing': 'bench' if key in tune else 'tune'})
            continue
        res = [r for r in benchjson.load(path)['results'] if r['ok'] and r['timed']]
        best = min(res, key=lambda r: r['us'])
        # the pick's time in the exhaustive run: the same clocks as the best's
        pick = [r for r in res if r['kernel'] == tune[key][0]]
        pick_us = pick[0]['us'] if pick else tune[key][1]
        rows.append({'name': name, 'part': PART[f], 'format': fmt, 'pick': tune[key][0],
                     'pick_us': pick_us, 'best_us': best['us'], 'ratio': pick_us / best['us'],
                     'tune_s': times[name][0], 'bench_s': times[name][1]})
    return rows


def main(out):
    print('%-44s %-46s %9s %9s %7s %8s %8s %6s' % ('case', 'tune pick', 'tune us', 'best us', 'ratio',
                                                 'tune s', 'bench s', 'share'))
    ok = n = 0
    tt = tb = 0.0
    for r in compare(out):
        if 'missing' in r:
            print('%-44s missing (%s)' % (r['name'], r['missing']))
            continue
        ts, bs = r['tune_s'], r['bench_s']
        tt, tb = tt + ts, tb + bs
        n += 1
        ok += r['ratio'] <= 1.03
        print('%-44s %-46s %9.2f %9.2f %7.3f %8.1f %8.1f %5.0f%%' % (r['name'], r['pick'][:46], r['pick_us'],
              r['best_us'], r['ratio'], ts, bs, 100 * ts / bs if bs else 0))
    if n:
        print('%d of %d cases within 3%% of the exhaustive best; tune %.0f s, exhaustive bench %.0f s '
              '(%.0f%%; target at most 25%%)' % (ok, n, tt, tb, 100 * tt / tb if tb else 0))


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'tune-out')
