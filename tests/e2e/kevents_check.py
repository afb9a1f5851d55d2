#!/usr/bin/env python3
"""Checks on `ptscope dump --slices` output for the kernel-event tests.

  kevents_check.py kevents DUMP     samples/kevents: syscall spans, the
                                    scheduler track, faults and signals
                                    inside the right functions, in order
  kevents_check.py latency DUMP     samples/slowcall: one slow-call mark
                                    after the whole slow handle() call
  kevents_check.py inside DUMP NAME FUNC   some event NAME lies inside FUNC

Prints one line per failed check and exits 1 if any failed."""
import re
import sys

LINE = re.compile(r'^(slice|instant) (.*)$')


def parse(path):
    evs = []
    for line in open(path):
        m = LINE.match(line)
        if not m:
            if line.startswith('meta '):
                k, v = re.match(r'meta "([^"]*)" "([^"]*)"', line).groups()
                evs.append({'kind': 'meta', 'key': k, 'value': v})
            continue
        d = {'kind': m.group(1), 'line': line.strip()}
        for k in ('pid', 'tid', 'ts', 'dur', 'depth'):
            f = re.search(r'\b%s=(\d+)' % k, line)
            d[k] = int(f.group(1)) if f else 0
        d['name'] = re.search(r'name="([^"]*)"', line).group(1)
        c = re.search(r'cat="([^"]*)"', line)
        d['cat'] = c.group(1) if c else ''
        a = re.search(r'args=\{(.*)\}$', line)
        d['args'] = a.group(1) if a else ''
        evs.append(d)
    return evs


# The decoder knows a span's end only from timing packets (one per 8 ns
# of virtual time) plus 1 ns per branch; kernel events have the exact
# virtual time of their step.  So a span's end gets 8 ns of slack.
SLACK = 8


def inside(e, f):
    return (f['tid'] == e['tid'] and f['ts'] <= e['ts'] and
            e['ts'] + e['dur'] <= f['ts'] + f['dur'] + SLACK)


def find(evs, name, cat=None, func=None, after=0):
    """First event NAME (category CAT) at or after AFTER inside a span of
    function FUNC on the same thread."""
    funcs = [f for f in evs if f['kind'] == 'slice' and f['name'] == func
             and f['cat'] == 'function'] if func else []
    for e in sorted((e for e in evs if e['kind'] != 'meta'),
                    key=lambda e: e['ts']):
        if e['name'] != name or (cat and e['cat'] != cat) or e['ts'] < after:
            continue
        if func and not any(inside(e, f) for f in funcs):
            continue
        return e
    return None


def check_kevents(evs, bad):
    meta = {e['key']: e['value'] for e in evs if e['kind'] == 'meta'}
    if meta.get('kernel_events_lost') != '0':
        bad.append('kernel_events_lost is %r, not 0' %
                   meta.get('kernel_events_lost'))
    t = 0
    steps = [('clock_nanosleep', 'syscall', 'do_sleep', None),
             ('openat', 'syscall', 'do_open', 'path="/dev/null"'),
             ('write', 'syscall', 'do_write', 'count=5'),
             ('read', 'syscall', 'pipe_wait', 'count=1'),
             ('page fault', 'fault', 'touch_page', 'kind="minor"'),
             ('kill', 'syscall', 'get_signal', 'signal="SIGUSR1"'),
             ('SIGUSR1 sent', 'signal', 'get_signal', None),
             ('SIGUSR1 delivered', 'signal', 'get_signal', None)]
    found = {}
    for name, cat, func, arg in steps:
        # In order, within SLACK: a short call on a slow host can come
        # out with no virtual duration (the step's own cost is taken off
        # it), and what it did then lands a nanosecond before its span.
        e = find(evs, name, cat, func, t - SLACK if t else 0)
        if not e:
            bad.append('no %s %r inside %s after ts %d (in order)' %
                       (cat, name, func, t))
            return
        if arg and arg not in e['args']:
            bad.append('%r has args {%s}, expected %s' %
                       (name, e['args'], arg))
        found[name] = e
        t = e['ts']
    # The blocked read: the thread's off-CPU spans show it asleep during
    # it, woken by the filler thread (.pftrace: a track of the thread,
    # read back as tid 0x40000000 | tid; .fxt/.json: on the thread
    # itself, nested inside the read).
    rd = found['read']
    sleeps = [e for e in evs if e['kind'] == 'slice' and e['cat'] == 'sched'
              and e['name'] == 'sleeping'
              and e['tid'] in (0x40000000 | rd['tid'], rd['tid'])
              and e['ts'] >= rd['ts'] - 2 and
              e['ts'] + e['dur'] <= rd['ts'] + rd['dur'] + 2]
    # The longest sleep is the wait for the filler's write: its waker is
    # the filler, another thread of the process (not the idle task of the
    # CPU the wakeup was queued to, which sched_wakeup alone reports).
    others = {e['tid'] for e in evs
              if e['kind'] != 'meta' and e['pid'] == rd['pid'] and
              e['tid'] < 0x40000000} - {rd['tid']}
    if not sleeps:
        bad.append('no "sleeping" off-CPU span during read')
    else:
        longest = max(sleeps, key=lambda s: s['dur'])
        w = re.search(r'woken_by_tid=(\d+)', longest['args'])
        if not w or int(w.group(1)) not in others:
            bad.append('the read was not woken by the other thread %s: %s' %
                       (sorted(others), longest['line']))
    if rd['dur'] < 10000000:
        bad.append('read lasted %d ns; the filler sleeps 50 ms' % rd['dur'])
    ns = found['clock_nanosleep']
    if not (900000 <= ns['dur'] <= 500000000):
        bad.append('clock_nanosleep lasted %d ns, not about 1 ms' %
                   ns['dur'])


def check_latency(evs, bad):
    marks = [e for e in evs if e['kind'] == 'instant' and
             e['name'] == 'slow call']
    if len(marks) != 1:
        bad.append('%d slow-call marks, expected 1' % len(marks))
        return
    m = marks[0]
    if 'symbol="handle"' not in m['args']:
        bad.append('the mark names another call: %s' % m['line'])
    dur = int(re.search(r'duration_ns=(\d+)', m['args']).group(1))
    if dur < 500000:
        bad.append('the mark says %d ns, under the threshold' % dur)
    slow = [f for f in evs if f['kind'] == 'slice' and f['name'] == 'handle'
            and f['dur'] >= 500000]
    if len(slow) != 1:
        bad.append('%d slow handle() spans in the trace, expected 1' %
                   len(slow))
        return
    h = slow[0]
    end = h['ts'] + h['dur']
    if not (end <= m['ts'] + 8 and m['ts'] - end < 1000):
        bad.append('the mark (ts %d) is not just after the slow call '
                   '(ends %d)' % (m['ts'], end))
    if abs(dur - h['dur']) > 1000:
        bad.append('the mark says %d ns, the span %d ns' % (dur, h['dur']))
    if not find(evs, 'clock_nanosleep', 'syscall', 'handle'):
        bad.append('the slow call holds no clock_nanosleep syscall span')
    fast = [f for f in evs if f['kind'] == 'slice' and
            f['name'] == 'handle' and f['dur'] < 500000]
    if len(fast) < 10:
        bad.append('only %d fast calls before the slow one' % len(fast))


def main():
    bad = []
    evs = parse(sys.argv[2])
    if sys.argv[1] == 'kevents':
        check_kevents(evs, bad)
    elif sys.argv[1] == 'latency':
        check_latency(evs, bad)
    elif sys.argv[1] == 'inside':
        if not find(evs, sys.argv[3], None, sys.argv[4]):
            bad.append('no %r inside %s' % (sys.argv[3], sys.argv[4]))
    for b in bad:
        print(b)
    return 1 if bad else 0


sys.exit(main())
