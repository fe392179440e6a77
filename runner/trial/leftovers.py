# leftovers.py: while a Harbor trial is graded live, the processes its agent
# left running and the verifier take turns, and every change to the
# verifier's directories is told apart by whose turn it was in
# (docs/security.md, "Processes the agent left").
#
# It runs in flightdeck's inspector (the engine host's PID namespace, out of
# sight of the trial's container) with the inspector's own python3:
#
#   leftovers.py hold DIR PID CUTOFF LIFETIME PROTECTED... -- BEFORE_PID...
#       The container's processes other than its own (BEFORE_PIDs started
#       by CUTOFF, a Unix time of this host's clock) are the agent's: stop
#       them all and print them, one JSON object; with none, print
#       {"held": []} and exit. Otherwise a daemon keeps them, with its state
#       in DIR, until release or LIFETIME seconds.
#   leftovers.py arm DIR
#       PROTECTED (the reward dir, the tests) exist anew: watch them, and let
#       the agent's processes run again in turns with the verifier's, once
#       the verifier's command has started.
#   leftovers.py release DIR
#       The grade is over: stop the turns, judge, resume every process, and
#       print the verdict: {"tampered": "...", "error": "..."}: what the
#       agent's processes changed in PROTECTED or held open there in their
#       turn, and what kept them from being told apart (a verifier's
#       process killed or traced in their turn, one of theirs that ran in
#       the verifier's, a failure here); "" for nothing.
#
# A process is the verifier's when its parent chain reaches a process whose
# parent is outside the container (an exec: the verifier's command, or
# flightdeck's own); a new process that does not is of the group whose turn
# it is (only that group and the container's own services run then). The
# agent's processes are only ever running while the verifier's are stopped:
# a change seen between the marks of their turns is theirs.
import ctypes
import json
import os
import shutil
import signal
import struct
import sys
import time

# A turn lasts until its group's processes all wait (or are done), within
# these bounds, in seconds: a busy group yields at the longest, a waiting
# one (a server between requests, a loop between writes, a verifier
# waiting for a server) soon.
VERIFIER_TURN = (0.05, 0.2)
AGENT_TURN = (0.02, 0.25)
STOP_PATIENCE = 30.0  # seconds a group may take to stop

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x1000000, 0x2000000, 0x40000000
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000
WRITES = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
          IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
NAMES = {IN_MODIFY: "modified", IN_ATTRIB: "attributes changed", IN_CLOSE_WRITE: "written",
         IN_MOVED_FROM: "moved away", IN_MOVED_TO: "moved in", IN_CREATE: "created",
         IN_DELETE: "deleted", IN_DELETE_SELF: "deleted", IN_MOVE_SELF: "moved"}
STOPPED = ("T", "t", "Z", "X")

libc = ctypes.CDLL(None, use_errno=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write_file(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def proc_stat(pid):
    """(state, ppid, start) of a process, start in clock ticks since boot."""
    data = read("/proc/%d/stat" % pid)
    rest = data[data.rindex(b")") + 2:].split()
    return rest[0].decode(), int(rest[1]), int(rest[19])


def waiting(pid):
    """Whether no thread of a process can run now."""
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            data = read("/proc/%d/task/%s/stat" % (pid, tid))
            if data[data.rindex(b")") + 2:].split()[0].decode() not in STOPPED + ("S", "I"):
                return False
    except OSError:
        pass  # gone
    return True


def stopped(pid):
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            data = read("/proc/%d/task/%s/stat" % (pid, tid))
            if data[data.rindex(b")") + 2:].split()[0].decode() not in STOPPED:
                return False
    except OSError:
        pass  # gone
    return True


def command(pid):
    try:
        return read("/proc/%d/cmdline" % pid).rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def short(cmd):
    return cmd if len(cmd) <= 60 else cmd[:57] + "..."


class Container:
    def __init__(self, pid):
        self.pid = pid
        self.ns = os.readlink("/proc/%d/ns/pid" % pid)
        self.root = "/proc/%d/root" % pid

    def alive(self):
        try:
            return os.readlink("/proc/%d/ns/pid" % self.pid) == self.ns
        except OSError:
            return False

    def inside(self, pid):
        try:
            return os.readlink("/proc/%d/ns/pid" % pid) == self.ns
        except OSError:
            return False

    def outside(self, pid):
        """Whether process pid is known to be outside the container (gone
        is not known)."""
        try:
            return os.readlink("/proc/%d/ns/pid" % pid) != self.ns
        except OSError:
            return False

    def pids(self):
        out = []
        for name in os.listdir("/proc"):
            if name.isdigit() and self.inside(int(name)):
                out.append(int(name))
        return out


class Turns:
    """The groups: the container's own processes (never stopped), the
    agent's and the verifier's, each process known by (pid, start)."""

    def __init__(self, c, own):
        self.c = c
        self.own = own  # (pid, start) of the container's own processes
        self.agent = {}  # (pid, start) -> command
        self.verifier = set()
        self.turn = None  # "agent" or "verifier" once armed

    def key(self, pid):
        try:
            st = proc_stat(pid)
        except (OSError, ValueError, IndexError):
            return None, None
        return (pid, st[2]), st

    def exec_root(self, st):
        """Whether a process (by its stat) is an exec's first: its parent is
        outside the container (the container's own first is no exec)."""
        return st[1] > 1 and self.c.outside(st[1])

    def classify(self, current):
        """Sorts every process of the container not yet known: the
        verifier's when its parent chain reaches an exec or a process of the
        verifier's, the agent's when it reaches one of the agent's, else the
        group of the turn (current). Returns the new ones as (key, group,
        whether it is an exec itself)."""
        new = []
        for pid in self.c.pids():
            k, st = self.key(pid)
            if k is None or k in self.own or k in self.agent or k in self.verifier:
                continue
            group = current
            p, s, seen = pid, st, 0
            while s is not None and seen < 4096:
                if p != pid and (p, s[2]) in self.verifier or p != self.c.pid and self.exec_root(s):
                    group = "verifier"
                    break
                if p != pid and (p, s[2]) in self.agent:
                    group = "agent"
                    break
                if p == self.c.pid or s[1] <= 1:
                    break
                p = s[1]
                try:
                    s = proc_stat(p)
                except (OSError, ValueError, IndexError):
                    s = None
                seen += 1
            if group == "verifier":
                self.verifier.add(k)
            else:
                self.agent[k] = command(pid)
            new.append((k, group, self.exec_root(st)))
        return new

    def state(self, k):
        """The state of process k, None once it is gone."""
        key, st = self.key(k[0])
        return st[0] if key == k else None

    def members(self, group):
        keys = self.agent.keys() if group == "agent" else self.verifier
        return [k for k in keys if self.key(k[0])[0] == k]

    def stop(self, group, current):
        """Stops every process of group, and whatever it starts meanwhile,
        until all its threads are stopped. current is the group whose turn
        ends (new processes are classified into it)."""
        deadline = time.monotonic() + STOP_PATIENCE
        while True:
            self.classify(current)
            pending = []
            for k in self.members(group):
                try:
                    os.kill(k[0], signal.SIGSTOP)
                except OSError:
                    continue
                pending.append(k)
            while pending and time.monotonic() < deadline:
                pending = [k for k in pending if not stopped(k[0])]
                if pending:
                    time.sleep(0.002)
            if pending:
                raise RuntimeError("%d process(es) of the %s's did not stop within %ds" % (len(pending), group, STOP_PATIENCE))
            # Whatever the group started before it stopped is stopped next
            # round; done when nothing new appeared.
            if not [k for k, g, _ in self.classify(current) if g == group]:
                return

    def turn_for(self, group, bounds, flags, watch):
        """Lets group run (resumed) for its turn: bounds (shortest,
        longest), ended early once all of it waits."""
        start = time.monotonic()
        while not flags["release"]:
            now = time.monotonic()
            if now - start >= bounds[1]:
                return
            if now - start >= bounds[0] and all(waiting(k[0]) for k in self.members(group)):
                return
            if watch is not None:
                watch.drain(self)
            time.sleep(0.005)

    def resume(self, group):
        for k in self.members(group):
            try:
                os.kill(k[0], signal.SIGCONT)
            except OSError:
                pass

    def agent_running(self):
        return [k for k in self.members("agent") if not stopped(k[0])]


class Watch:
    """inotify over the protected paths (recursively), the directories
    that lead to them (for the entries on the way), and the turn marks."""

    def __init__(self, c, protected, marks):
        self.c = c
        self.fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.wds = {}  # wd -> [container path, entries watched (None: all)]
        self.protected = protected
        self.found = []
        self.overflow = False
        self.roots = {}  # protected path -> its stat when watched
        for p in protected:
            parts = p.strip("/").split("/")
            for i in range(len(parts)):
                self.add("/" + "/".join(parts[:i]), parts[i])
            self.add_tree(p)
        self.mark_wd = self.add_host(marks, IN_CLOSE_WRITE)

    def add_host(self, path, mask):
        wd = libc.inotify_add_watch(self.fd, path.encode(), mask | IN_ONLYDIR | IN_DONT_FOLLOW)
        if wd < 0:
            raise OSError(ctypes.get_errno(), "watch " + path)
        return wd

    def add(self, path, entry=None):
        wd = self.add_host(self.c.root + path, WRITES)
        w = self.wds.setdefault(wd, [path, set()])
        if entry is None:
            w[1] = None
        elif w[1] is not None:
            w[1].add(entry)

    def add_tree(self, path):
        try:
            self.add(path)
            if path in self.protected:
                self.roots[path] = os.stat(self.c.root + path)
        except OSError:
            return
        try:
            with os.scandir(self.c.root + path) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        self.add_tree(path.rstrip("/") + "/" + e.name)
        except OSError:
            pass

    def inodes(self):
        out = set()
        for p in self.protected:
            for dirpath, _, files in os.walk(self.c.root + p):
                for n in [dirpath] + [os.path.join(dirpath, f) for f in files]:
                    try:
                        st = os.lstat(n)
                        out.add((st.st_dev, st.st_ino))
                    except OSError:
                        pass
        return out

    def drain(self, turns):
        """Reads every event so far, following the turns by their marks; a
        change in the agent's turn is recorded. Returns the marks read."""
        got = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return got
            i = 0
            while i < len(buf):
                wd, mask, _, n = struct.unpack_from("iIII", buf, i)
                name = buf[i + 16:i + 16 + n].rstrip(b"\0").decode(errors="replace")
                i += 16 + n
                if mask & IN_Q_OVERFLOW:
                    self.overflow = True
                    continue
                if wd == self.mark_wd:
                    turns.turn = name
                    got.append(name)
                    continue
                w = self.wds.get(wd)
                if w is None or not mask & WRITES:
                    continue
                path, entries = w
                self_event = mask & (IN_DELETE_SELF | IN_MOVE_SELF)
                if entries is not None and name not in entries and not self_event:
                    continue
                full = path.rstrip("/") + "/" + name if name else path
                if turns.turn == "agent":
                    what = [v for k, v in NAMES.items() if mask & k]
                    self.found.append("%s %s in the agent's turn" % (full, what[0] if what else "changed"))
                elif mask & (IN_CREATE | IN_MOVED_TO) and mask & IN_ISDIR:
                    # A dir the verifier made: watched from now on, and so
                    # is a protected dir it made anew.
                    if entries is None:
                        self.add_tree(full)
                    for p in self.protected:
                        if p == full or p.startswith(full + "/"):
                            self.add_tree(p)

    def replaced(self):
        out = []
        for p, was in self.roots.items():
            try:
                now = os.stat(self.c.root + p)
                if (now.st_dev, now.st_ino) != (was.st_dev, was.st_ino):
                    out.append(p)
            except OSError:
                out.append(p)
        return out


def held_refs(turns, inodes, where):
    """The protected files the agent's (stopped) processes hold open or
    map, and the verifier's processes they trace."""
    out, traced = [], []
    for k in turns.members("agent"):
        pid = k[0]
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    st = os.stat("/proc/%d/fd/%s" % (pid, fd))
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) in inodes:
                    out.append("process %d (%s) holds a file in %s open" % (pid, short(command(pid)), where))
            for line in read("/proc/%d/maps" % pid).decode(errors="replace").splitlines():
                f = line.split()
                if len(f) >= 6 and f[4] != "0":
                    major, minor = (int(x, 16) for x in f[3].split(":"))
                    if (os.makedev(major, minor), int(f[4])) in inodes:
                        out.append("process %d (%s) maps a file in %s" % (pid, short(command(pid)), where))
        except OSError:
            continue
    agent_pids = {k[0] for k in turns.members("agent")}
    for k in turns.members("verifier"):
        try:
            for line in read("/proc/%d/status" % k[0]).decode().splitlines():
                if line.startswith("TracerPid:") and int(line.split()[1]) in agent_pids:
                    traced.append("process %s of the agent's traces the verifier's %d" % (line.split()[1], k[0]))
        except OSError:
            continue
    return sorted(set(out)), sorted(set(traced))


def mark(d, name):
    with open(os.path.join(d, "marks", name), "w") as f:
        f.write(name)


def wait_for(d, names, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for n in names:
            p = os.path.join(d, n)
            if os.path.exists(p):
                return n, read(p).decode()
        time.sleep(0.005)
    return None, None


def daemon(d, c, turns, lifetime, protected, flags):
    deadline = time.monotonic() + lifetime
    verdict, errors = [], []
    watch = None
    try:
        try:
            turns.stop("agent", "agent")
        except Exception as e:  # noqa: BLE001
            write_file(os.path.join(d, "held"), json.dumps({"held": sorted(set(turns.agent.values())), "error": str(e)}))
            raise
        write_file(os.path.join(d, "held"), json.dumps({"held": sorted(set(turns.agent.values()))}))
        while not flags["arm"] and not flags["release"] and time.monotonic() < deadline and c.alive():
            time.sleep(0.005)
        if flags["arm"] and not flags["release"]:
            os.makedirs(os.path.join(d, "marks"), exist_ok=True)
            watch = Watch(c, protected, os.path.join(d, "marks"))
            turns.turn = "verifier"
            write_file(os.path.join(d, "armed"), "{}")
            run_turns(d, c, turns, watch, flags, deadline, verdict, errors)
    except Exception as e:  # noqa: BLE001 - what is not kept apart voids the grade
        errors.append("the agent's processes could not be kept apart from the verifier's: %s" % e)
    finally:
        if watch is not None:
            if watch.overflow:
                verdict.append("more changes than could be told apart")
            found = list(dict.fromkeys(watch.found))
            verdict.extend(found[:5])
            if len(found) > 5:
                verdict.append("%d more" % (len(found) - 5))
            verdict.extend("%s was made anew" % p for p in watch.replaced())
        turns.resume("verifier")
        turns.resume("agent")
        write_file(os.path.join(d, "armed"), "{}")  # an arm waiting for it returns
        while not flags["release"] and time.monotonic() < deadline and c.alive():
            time.sleep(0.01)
        said = "; ".join(dict.fromkeys(verdict))
        write_file(os.path.join(d, "verdict"), json.dumps({"tampered": said, "error": "; ".join(dict.fromkeys(errors))}))


def run_turns(d, c, turns, watch, flags, deadline, verdict, errors):
    # Until the verifier's command starts, the agent's processes stay
    # stopped; from then on they take the first turn.
    started = False
    while not flags["release"] and time.monotonic() < deadline and c.alive():
        if not started:
            watch.drain(turns)
            started = any(g == "verifier" and root for _, g, root in turns.classify("verifier"))
            if not started:
                time.sleep(0.002)
                continue
        turns.stop("verifier", "verifier")
        running = turns.agent_running()
        if running:
            errors.append("%d process(es) of the agent's ran in the verifier's turn" % len(running))
        verifier = [k for k in turns.members("verifier") if turns.state(k) not in (None, "Z", "X")]
        mark(d, "agent")
        while "agent" not in watch.drain(turns) and not watch.overflow:
            time.sleep(0.001)
        turns.resume("agent")
        turns.turn_for("agent", AGENT_TURN, {"release": False}, None)
        turns.stop("agent", "agent")
        refs, traced = held_refs(turns, watch.inodes(), " or ".join(watch.protected))
        verdict.extend(refs)
        errors.extend(traced)
        if c.alive():
            for k in verifier:
                if turns.state(k) in (None, "Z", "X"):
                    errors.append("process %d of the verifier's was killed in the agent's turn" % k[0])
        mark(d, "verifier")
        while "verifier" not in watch.drain(turns) and not watch.overflow:
            time.sleep(0.001)
        turns.resume("verifier")
        turns.turn_for("verifier", VERIFIER_TURN, flags, watch)
    # The agent's processes are stopped (the last turn was the verifier's):
    # read what is left.
    turns.stop("agent", "verifier")
    mark(d, "end")
    while "end" not in watch.drain(turns) and not watch.overflow:
        time.sleep(0.001)


def main():
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "hold":
        hold(d, sys.argv[3:])
        return
    pid = int(read(os.path.join(d, "pid")))
    if cmd == "arm":
        os.kill(pid, signal.SIGUSR1)
        _, out = wait_for(d, ["armed"], 60)
        if out is None:
            sys.exit("the agent's processes are not watched")
        print(out)
    elif cmd == "release":
        try:
            os.kill(pid, signal.SIGUSR2)
        except ProcessLookupError:
            pass
        _, out = wait_for(d, ["verdict"], STOP_PATIENCE + 30)
        if out is None:
            sys.exit("no verdict on the agent's processes")
        print(out)
        shutil.rmtree(d, ignore_errors=True)


def hold(d, args):
    sep = args.index("--")
    pid, cutoff, lifetime = int(args[0]), float(args[1]), float(args[2])
    protected, before = args[3:sep], [int(x) for x in args[sep + 1:]]
    c = Container(pid)
    tick = os.sysconf("SC_CLK_TCK")
    boot = time.time() - float(read("/proc/uptime").split()[0])
    own = set()
    for p in [pid] + before:
        try:
            st = proc_stat(p)
        except (OSError, ValueError, IndexError):
            continue
        if p == pid or (c.inside(p) and boot + st[2] / tick <= cutoff):
            own.add((p, st[2]))
    turns = Turns(c, own)
    turns.classify("agent")
    if not turns.agent:
        print(json.dumps({"held": []}))
        return
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        os.close(r)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        flags = {"arm": False, "release": False}
        signal.signal(signal.SIGUSR1, lambda *_: flags.__setitem__("arm", True))
        signal.signal(signal.SIGUSR2, lambda *_: flags.__setitem__("release", True))
        write_file(os.path.join(d, "pid"), str(os.getpid()))
        os.close(w)
        try:
            daemon(d, c, turns, lifetime, protected, flags)
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(child, 0)
    os.read(r, 1)  # the daemon has written its pid
    os.close(r)
    _, out = wait_for(d, ["held"], STOP_PATIENCE + 30)
    if out is None:
        sys.exit("the agent's processes were not stopped")
    print(out)


if __name__ == "__main__":
    main()
