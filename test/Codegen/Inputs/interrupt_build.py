"""Interrupts a build in the middle and checks that it leaves nothing behind.

Usage: interrupt_build.py TMPDIR OUTPUT -- xfc ARGS...

Starts the command with TMPDIR set, waits until its temporary directory holds a
file (the build has begun writing), sends SIGTERM, and then requires a failing
exit status, an empty TMPDIR and no OUTPUT (nor any file beside it named after
it). A fixed timeout instead would race the build: on a fast or idle machine the
build may finish first, on a loaded one the signal may come before any file is
written.
"""
import os
import signal
import subprocess
import sys
import time


def fail(message):
    print(f"interrupt_build: {message}", file=sys.stderr)
    sys.exit(1)


def files_under(directory):
    return [os.path.join(root, name)
            for root, _, names in os.walk(directory) for name in names]


def main():
    tmpdir, output, dashes, *command = sys.argv[1:]
    if dashes != "--" or not command:
        fail("usage: interrupt_build.py TMPDIR OUTPUT -- COMMAND...")
    env = dict(os.environ, TMPDIR=tmpdir)
    build = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not files_under(tmpdir):
        if build.poll() is not None:
            fail(f"the build ended (status {build.returncode}) before writing "
                 "a temporary file: nothing was interrupted")
        if time.monotonic() > deadline:
            build.kill()
            fail("no temporary file within 120 s")
        time.sleep(0.02)
    build.send_signal(signal.SIGTERM)
    try:
        _, stderr = build.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        build.kill()
        fail("the build did not stop within 60 s of SIGTERM")
    if build.returncode == 0:
        fail("the interrupted build reported success")
    left = files_under(tmpdir) + os.listdir(tmpdir)
    if left:
        fail(f"left behind in TMPDIR: {left}")
    directory, name = os.path.split(os.path.abspath(output))
    beside = [n for n in os.listdir(directory) if name in n]
    if beside:
        fail(f"left beside the output: {beside}")
    sys.stderr.write(stderr.decode(errors="replace"))
    print(f"interrupted: status {build.returncode}, nothing left behind")


if __name__ == "__main__":
    main()
