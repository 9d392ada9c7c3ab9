"""What the suite reads from /proc and the machine: a process tree's CPU time
and resident memory, the descriptor limit children get, the machine's
description and the tools' versions; and a free loopback port and the wait
for a server to listen on it, which bench/'s other scripts use too."""

import os
import platform
import re
import resource
import socket
import subprocess
import time

TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """The fields of /proc/PID/stat after the ')' of comm: index 0 is state,
    1 ppid, 11 utime, 12 stime (stat(5) fields 3, 4, 14 and 15)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def descendants(pid):
    """pid and every process below it (nginx's and h2o's workers)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            ppid = int(_stat_fields(int(name))[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, []))
    return tree


def cpu_seconds(pid):
    """utime + stime of pid and its descendants, all their threads, in
    seconds; None when pid is gone."""
    total = 0
    found = False
    for p in descendants(pid):
        try:
            f = _stat_fields(p)
        except OSError:
            continue
        found = True
        total += int(f[11]) + int(f[12])
    return total / TICKS if found else None


def _tasks(pid):
    """(pid, tid) of every thread of pid and its descendants, as listed
    now (a thread may end before it is read)."""
    for p in descendants(pid):
        try:
            tasks = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tasks:
            yield p, t


def cpu_ns(pid):
    """(nanoseconds, threads): the time on a CPU of every thread of pid and
    its descendants (/proc/PID/task/TID/schedstat, field 1: the scheduler's
    own sum, user and kernel time together, to the nanosecond, where
    /proc/PID/stat counts in clock ticks of 10 ms), and the set of (pid,
    tid) read; (None, set()) when pid is gone. A thread that ended
    between two reads takes its time with it: compare the sets."""
    total = 0
    seen = set()
    for p, t in _tasks(pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (p, t)) as f:
                total += int(f.read().split()[0])
            seen.add((p, int(t)))
        except (OSError, ValueError, IndexError):
            continue
    return (total if seen else None), seen


def context_switches(pid):
    """Voluntary and involuntary context switches of pid and its
    descendants, every thread (/proc/PID/task/*/status); None when pid is
    gone. A thread that ended meanwhile takes its count with it."""
    total = 0
    found = False
    for p, t in _tasks(pid):
        try:
            with open("/proc/%d/task/%s/status" % (p, t)) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:",
                                        "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
                        found = True
        except (OSError, ValueError):
            continue
    return total if found else None


def rss_bytes(pid):
    """VmRSS of pid and its descendants (each process counted whole: pages
    nginx's master and workers share are counted in each)."""
    total = 0
    found = False
    for p in descendants(pid):
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        found = True
                        break
        except OSError:
            continue
    return total if found else None


def threads(pid):
    n = 0
    for p in descendants(pid):
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("Threads:"):
                        n += int(line.split()[1])
        except OSError:
            pass
    return n


def fd_limit():
    """Raises this process's descriptor limit, which the children inherit:
    to 65536 when the process may raise its hard limit (CAP_SYS_RESOURCE),
    else the soft limit to the hard one. Returns the limit in force."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        new_hard = hard if hard == resource.RLIM_INFINITY else max(65536, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (65536, new_hard))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def established(port):
    """Connections in ESTABLISHED state whose local port is port (the
    server's side of each connection, accepted or waiting in the queue)."""
    n = 0
    want = ":%04X" % port
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    cols = line.split(None, 4)
                    if cols[1].endswith(want) and cols[3] == "01":
                        n += 1
        except OSError:
            pass
    return n


def exit_text(returncode):
    """'exited with status N' or 'was killed by signal N' (Popen's negative
    return codes)."""
    if returncode is None:
        return "is running"
    if returncode < 0:
        return "was killed by signal %d" % -returncode
    return "exited with status %d" % returncode


def _first(path, pattern):
    try:
        with open(path) as f:
            for line in f:
                m = re.match(pattern, line)
                if m:
                    return m.group(1).strip()
    except OSError:
        pass
    return "?"


def machine():
    """CPU model, cores, memory, kernel, load average."""
    mem_kib = _first("/proc/meminfo", r"MemTotal:\s+(\d+)")
    return {
        "cpu": _first("/proc/cpuinfo", r"model name\s*:\s*(.*)"),
        "cores": os.cpu_count(),
        "memory": "%.1f GiB" % (int(mem_kib) / 1048576) if mem_kib.isdigit() else "?",
        "kernel": "%s %s %s" % (platform.system(), platform.release(), platform.machine()),
        "loadavg": " ".join(open("/proc/loadavg").read().split()[:3]),
    }


def output_of(cmd):
    """First line of a command's output (stdout, else stderr), or '?'."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    text = (p.stdout.strip() or p.stderr.strip()).splitlines()
    return text[0].strip() if text else "?"


def free_port():
    """A TCP port of 127.0.0.1 free now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, limit=10):
    """Waits until something accepts on 127.0.0.1:port, for at most `limit`
    seconds; RuntimeError when proc exits first or the time runs out."""
    end = time.time() + limit
    while time.time() < end:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError("server exited: %s" % err)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not listen on %d" % port)
