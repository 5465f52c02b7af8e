"""bulkhead's Python cell server: one persistent interpreter behind CELL.

Started by bulkhead-init (PID 1 of the sandbox) as the sandbox user, cwd
/work, as `/usr/bin/python3 -I -u cell.py`, with

    fd 0  /dev/null
    fd 1  stdout and fd 2 stderr: pipes the init reads for the whole life
          of this process, so output of subprocesses a cell starts is
          captured as well
    fd 3  requests from the init
    fd 4  replies to the init

Protocol (the init's side is src/init/cell.c):

    request, fd 3, one line:  {"nonce": "<32 hex>", "code": "<source>"}
    reply,   fd 4, one line:  {"nonce": "<same>", "status": "ok"|"error"}

Exactly one reply per request, written only after the cell finished and
stdout and stderr were flushed (the init drains the pipes after the reply,
so nothing the cell printed is lost or reordered). Nothing else is ever
written to fd 4. "error" means the cell raised; its traceback went to
stderr and the namespace survives. EOF on fd 3 ends the server.

-I keeps /work off sys.path, so a json.py there cannot shadow the
standard library; the server never adds it back.
"""

import ast
import builtins
import json
import linecache
import os
import sys
import traceback
import types

REQ_FD = 3
REP_FD = 4
MAX_REQUEST = 1 << 30  # the init sends at most ~100 MiB of escaped code

_SERVER_FILE = __file__
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect
_SERVER_PID = os.getpid()
# Cells share these modules and may patch them (eventlet patches os.read,
# a cell may assign json.loads): the server keeps the originals.
_os_read = os.read
_os_write = os.write
_os_exit = os._exit
_getpid = os.getpid
_json_loads = json.loads
_print = builtins.print
_HEX = frozenset("0123456789abcdef")


def _private_fds():
    # Subprocesses (os.system, os.exec*, Popen(close_fds=False)) must never
    # inherit the init's pipes.
    for fd in (REQ_FD, REP_FD):
        os.set_inheritable(fd, False)


def _lenient_stdio():
    # A cell printing a lone surrogate should print something, not fail.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass


def _flush_all():
    seen = set()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is None or id(stream) in seen:
            continue
        seen.add(id(stream))
        try:
            stream.flush()
        except Exception:
            pass


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = _os_write(fd, view)
        view = view[n:]


class _Requests:
    """Lines from fd 3, read with os.read so no buffered file object exists
    for a cell to stumble on."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = bytearray()

    def next_line(self):
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line = bytes(self.buf[:nl])
                del self.buf[: nl + 1]
                return line
            if len(self.buf) > MAX_REQUEST:
                raise ValueError("request line too long")
            # 64 KiB stays below malloc's mmap threshold: a 1 MiB read
            # cost a map and an unmap on every request.
            chunk = _os_read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk


class Kernel:
    def __init__(self):
        # The user's namespace is a real __main__ module, so pickle and
        # multiprocessing find what cells define under "__main__".
        self.main = types.ModuleType("__main__")
        self.ns = self.main.__dict__
        self.ns["__builtins__"] = builtins
        sys.modules["__main__"] = self.main
        # asyncio (and inspect) pull in some 70 modules and 5 MiB that most
        # sessions never use: the loop is made on the first cell that awaits.
        self.loop = None
        self.count = 0

    def _event_loop(self):
        import asyncio
        import warnings

        if self.loop is None or self.loop.is_closed():
            # A loop the cells already made (asyncio.get_event_loop()
            # before any await) is the one every await must run on.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                try:
                    loop = asyncio.get_event_loop_policy().get_event_loop()
                except RuntimeError:
                    loop = None
            if loop is None or loop.is_closed():
                loop = asyncio.new_event_loop()
            self.loop = loop
        asyncio.set_event_loop(self.loop)
        return self.loop

    def _run(self, code):
        value = eval(code, self.ns)
        if code.co_flags & _CO_COROUTINE:
            value = self._event_loop().run_until_complete(value)
        return value

    def run_cell(self, source):
        """Runs one cell; returns True if it completed without raising."""
        self.count += 1
        filename = "<cell-%d>" % self.count
        # Tracebacks show the cell's source lines, like in a notebook.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        # An earlier cell may have run asyncio.run(), which unsets it.
        if self.loop is not None and "asyncio" in sys.modules:
            sys.modules["asyncio"].set_event_loop(self.loop)
        try:
            tree = ast.parse(source, filename=filename, mode="exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec", flags=flags)
            tail = compile(last, filename, "eval", flags=flags) if last else None
            self._run(body)
            if tail is not None:
                value = self._run(tail)
                if value is not None:
                    # One write, not print's two (the value, then its
                    # newline): every system call is a trip through gVisor.
                    sys.stdout.write(repr(value) + "\n")
            return True
        except SystemExit as e:
            # The interpreter is shared by every later cell: exiting is
            # reported, not obeyed.
            _print("SystemExit: %s" % (e.code,), file=sys.stderr)
            return False
        except BaseException as e:  # noqa: B036 - a cell may raise anything
            self._print_exception(e)
            return False

    @staticmethod
    def _print_exception(e):
        # Frames of the server and of asyncio's machinery come first; the
        # user's traceback starts at the first frame of a cell.
        tb = e.__traceback__
        while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
            tb = tb.tb_next
        try:
            if tb is None and not isinstance(e, SyntaxError):
                tb = e.__traceback__
                while tb is not None and tb.tb_frame.f_code.co_filename == _SERVER_FILE:
                    tb = tb.tb_next
            text = "".join(traceback.format_exception(type(e), e, tb))
        except BaseException:
            text = "%s: (the exception could not be formatted)\n" % type(e).__name__
        try:
            sys.stderr.write(text)
        except BaseException:
            _write_all(2, text.encode("utf-8", "backslashreplace"))


def _reply(nonce, ok):
    _flush_all()
    # The nonce was checked to be hex: nothing in the line needs escaping.
    line = '{"nonce":"%s","status":"%s"}\n' % (nonce, "ok" if ok else "error")
    _write_all(REP_FD, line.encode("ascii"))


def main():
    _private_fds()
    _lenient_stdio()
    kernel = Kernel()
    requests = _Requests(REQ_FD)
    while True:
        line = requests.next_line()
        if line is None:
            return 0
        try:
            req = _json_loads(line)
            nonce = req["nonce"]
            code = req["code"]
            if not isinstance(code, str) or not isinstance(nonce, str) or not set(nonce) <= _HEX:
                raise TypeError("nonce must be hex and code a string")
        except Exception as e:
            # Without a nonce there is no valid reply: ending is the only
            # honest answer, and the init reports the exit status.
            _write_all(2, ("bulkhead cell server: bad request: %s\n" % e).encode())
            return 2
        ok = kernel.run_cell(code)
        if _getpid() != _SERVER_PID:
            # A fork made by the cell returned into the server: it must not
            # answer (or read) in the real server's place.
            _flush_all()
            _os_exit(0)
        _reply(nonce, ok)


if __name__ == "__main__":
    sys.exit(main())
