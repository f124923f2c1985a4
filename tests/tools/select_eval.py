#!/usr/bin/env python3
"""Evaluates a manifest's select table by the rule of docs/manifest.md,
independently of libqkrt, and compares it with test_select's answers.

usage: select_eval.py TEST_SELECT BUNDLE [--expect-device-rules | --expect-default-only |
                                          --expect-levels L1,L2...]

Asks a grid of shapes at, between and beyond the tuned ones for every
(op, format) the table names; fails on any disagreement of kernel or level
(device, family, vendor, default). --expect-levels: every answer comes from
one of the levels listed, and some from the first."""
import json, os, re, subprocess, sys

import manifest_view


def constraint_ok(expr, env):
    m = re.match(r'^(.*?)(==|!=|<=|>=|<|>)(.*)$', expr)
    if not m:
        return False
    def ev(e):
        e = re.sub(r'\b([A-Za-z_]\w*)\b', lambda v: str(env[v.group(1)]), e)
        return eval(e.replace('/', '//'))
    try:
        a, op, b = ev(m.group(1)), m.group(2), ev(m.group(3))
    except KeyError:  # a variable the query does not give: libqkrt's fails the constraint
        return False
    return {'==': a == b, '!=': a != b, '<=': a <= b, '>=': a >= b, '<': a < b, '>': a > b}[op]


def in_range(r, v):
    lo, hi = r
    return v >= lo and (hi is None or v <= hi)


LEVELS = ('device', 'family', 'vendor', 'default')


def entries(table, device):
    """The entry each level reads: device, family, vendor (None: none)."""
    vendor, dev_id, driver = device
    own = [d for d in table['devices'] if d['vendor_id'] == vendor and d['device_id'] == dev_id]
    exact = [d for d in own if d['driver_version'] == driver]
    others = [d for d in table['devices'] if d['vendor_id'] == vendor and d['device_id'] != dev_id
              and 'family_mask' in d]
    same = lambda d: d['device_id'] & d['family_mask'] == dev_id & d['family_mask']
    family = [d for d in others if same(d)]
    rest = [d for d in others if not same(d)]
    return [(exact or own or [None])[0], (family or [None])[0], (rest or [None])[0]]


def select(man, device, op, fmt, shape, act='f32', two_pass=False):
    """(kernel, level) by docs/manifest.md's rule, or ('-', None); with
    two_pass, a two-pass rule answers too, as 'twopass:FIRST+KERNEL'."""
    name, _, opt = fmt.partition('/')
    t = man['select']
    kernels = {k['name']: k for k in manifest_view.kernels(man)}
    env = dict(shape, ne11=1, max_per_expert=shape['T'])
    env.setdefault('N', shape['M'])  # the row length of the kernels that call it N (moe_combine)
    lists = [(e.get('rules', []) if e else []) for e in entries(t, device)] + [t['default']]
    for level, rules in zip(LEVELS, lists):
        for r in rules:
            if r['op'] != op or r['format'] != name or (fmt.count('/') and r['format_variant'] != opt):
                continue
            if r.get('activations', 'f32') != act:
                continue
            if 'first_pass' in r and not two_pass:  # qkrt_select_ex's callers only
                continue
            if not all(in_range(r[d], shape[d]) for d in 'MKT'):
                continue
            k = kernels.get(r['kernel'])
            if not k or (k.get('activation') or 'f32') != act:
                continue
            if not all(constraint_ok(c, env) for c in k['constraints']):
                continue
            if 'first_pass' in r:
                if r['first_pass'] not in kernels:
                    continue
                return 'twopass:%s+%s' % (r['first_pass'], r['kernel']), level
            return r['kernel'], level
    return '-', None


def main():
    exe, bundle = sys.argv[1], sys.argv[2]
    expect = sys.argv[3] if len(sys.argv) > 3 else ''
    man = json.load(open(os.path.join(bundle, 'manifest.json')))
    groups = {}
    for lst in [d['rules'] for d in man['select']['devices']] + [man['select']['default']]:
        for r in lst:
            g = groups.setdefault((r['op'], r['format'], r['format_variant'],
                                   r.get('activations', 'f32')), set())
            if 'at' in r:
                g.add(tuple(r['at']))
    queries = []
    for (op, fmt, opt, act), ats in groups.items():
        ms = sorted({a[0] for a in ats} | {37})
        ks = sorted({a[1] for a in ats} | {256})
        ts = sorted({a[2] for a in ats})
        tq = sorted({1, 2, 3, 5, 7, 1000} | set(ts) | {t + 1 for t in ts} | {max(1, t - 1) for t in ts})
        mq = sorted(set(ms) | {1, 2 * max(ms) + 1})
        kq = sorted(set(ks) | {2 * max(ks)})
        e, tk = (4, 2) if op.endswith('_id') else (0, 0)
        f = fmt + ('/' + opt if opt else '')
        for m in mq:
            for k in kq:
                for t in tq:
                    # each on the group's activations, and an f32 group's on f16 too
                    for a in sorted({act, 'f16'}):
                        queries.append((op, f, m, k, t, e, tk, a))
    text = ''.join('%s %s %d %d %d %d %d %s\n' % q for q in queries)
    out = subprocess.run([exe, bundle], input=text, capture_output=True, text=True)
    if out.returncode:
        print('FAIL: test_select:', out.stderr)
        return 1
    lines = out.stdout.splitlines()
    device = tuple(int(x) for x in lines[0].split()[1:4])
    bad = 0
    count = dict.fromkeys(LEVELS, 0)
    for q, got in zip(queries, lines[1:]):
        shape = {'M': q[2], 'K': q[3], 'T': q[4], 'E': max(q[5], 1), 'top_k': max(q[6], 1)}
        kernel, level = select(man, device, q[0], q[1], shape, q[7], two_pass=True)
        want = kernel + ' ' + level if level else '-'
        if kernel.startswith('twopass:'):  # and what a caller of one kernel gets
            want += ' then ' + select(man, device, q[0], q[1], shape, q[7])[0]
        if level:
            count[level] += 1
        if got != want:
            bad += 1
            if bad <= 10:
                print('FAIL %s %s M=%d K=%d T=%d %s: qkrt_select %s, the rule %s'
                      % (q[0], q[1], q[2], q[3], q[4], q[7], got, want))
    if len(lines) - 1 != len(queries):
        print('FAIL: %d answers for %d queries' % (len(lines) - 1, len(queries)))
        bad += 1
    if expect == '--expect-device-rules' and not count['device']:
        print('FAIL: no answer came from the device\'s own rules')
        bad += 1
    if expect == '--expect-default-only':
        expect, sys.argv[4:] = '--expect-levels', ['default']
    if expect == '--expect-levels':
        allowed = sys.argv[4].split(',')
        other = sum(n for level, n in count.items() if level not in allowed)
        if other or not count[allowed[0]]:
            print('FAIL: answers by level %s, wanted only %s and some from %s'
                  % (count, ', '.join(allowed), allowed[0]))
            bad += 1
    print('%d queries: %d agree (by level: %s), %d differ'
          % (len(queries), len(queries) - bad,
             ', '.join('%s %d' % (level, n) for level, n in count.items()), bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
