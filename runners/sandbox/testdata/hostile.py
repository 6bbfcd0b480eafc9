# A program that tries to hold TARGET bytes where RLIMIT_AS does not see
# them, printing "held N" as it goes and "done N" when it holds them all.
#
#   hostile.py memfd TARGET      memfds of 128 MiB each (under RLIMIT_FSIZE), written, never mapped
#   hostile.py sysv TARGET       SysV shared memory segments of 64 MiB, filled, then detached
#   hostile.py posixshm TARGET   a file in /dev/shm, unlinked, written
#   hostile.py children TARGET N N processes each holding TARGET/N bytes (each under RLIMIT_AS)
#   hostile.py plain TARGET      one honest allocation of TARGET bytes
import ctypes
import os
import sys
import time

mode, target = sys.argv[1], int(sys.argv[2])
step = 16 << 20
chunk = b"\x01" * step


def report(n):
    print("held", n, flush=True)


held = 0
if mode == "memfd":
    fds = []
    while held < target:
        if held % (128 << 20) == 0:
            fds.append(os.memfd_create("hostile"))
        os.write(fds[-1], chunk)
        held += step
        report(held)
elif mode == "sysv":
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.shmat.restype = ctypes.c_void_p
    libc.shmdt.argtypes = [ctypes.c_void_p]
    seg = 64 << 20
    while held < target:
        id = libc.shmget(0, seg, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        if id < 0:
            sys.exit("shmget: errno %d" % ctypes.get_errno())
        p = libc.shmat(id, None, 0)
        if p is None or p == ctypes.c_void_p(-1).value:
            sys.exit("shmat: errno %d" % ctypes.get_errno())
        ctypes.memset(p, 1, seg)
        libc.shmdt(p)
        held += seg
        report(held)
elif mode == "posixshm":
    name = "/dev/shm/lacuna-hostile-%d" % os.getpid()
    fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.unlink(name)
    while held < target:
        os.write(fd, chunk)
        held += step
        report(held)
elif mode == "children":
    n = int(sys.argv[3])
    each = target // n
    r, w = os.pipe()
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(1)  # so that the output ends with the parent
            os.close(2)
            b = b"\x01" * each
            os.write(w, b"x")
            os.close(w)
            time.sleep(30)
            os._exit(0)
        pids.append(pid)
    os.close(w)
    dead = set()
    for i in range(n):
        if os.read(r, 1) == b"":
            sys.exit("a child died")
        # What is held is what the children alive now hold: the OOM killer
        # may have ended one that had reported (the largest) to let the next
        # allocate, and its memory is not held any more.
        for pid in pids:
            if pid not in dead and os.waitpid(pid, os.WNOHANG) != (0, 0):
                dead.add(pid)
        held = each * (i + 1 - len(dead))
        report(held)
else:
    b = b"\x01" * target
    held = target
    report(held)
print("done", held, flush=True)
