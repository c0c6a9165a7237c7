"""What the agent does with each signal (issue 26). docs/signals.md says the same for users.

Without handlers, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT and SIGALRM killed the agent outright: tools
in flight orphaned, samples not yet written lost, and, since systemd counts SIGHUP as a clean
exit, ``Restart=on-failure`` did not bring it back. Now every signal a user or a tool may send
is decided:

* SIGTERM, SIGINT: the clean stop (agent/server.py ``AgentServer``); exit status 0.
* SIGHUP: reload the configuration (agent/reload.py); the agent keeps running.
* SIGQUIT: write every thread's stack to stderr (the journal), as a Go exporter does, then the
  same clean stop as SIGTERM; exit status 131 (128 + 3), so a unit with
  ``Restart=on-failure`` starts the agent again. It is what one sends to see where a hung
  agent is, not a way to stop it for good.
* SIGUSR1, SIGUSR2, SIGALRM: ignored, with one log line a minute per signal; they have no
  meaning here and must not kill a monitoring agent that something sent them to by mistake.
* SIGPIPE: ignored (Python's default): a client that went away is an error on that socket.

Every handled signal that does not stop the agent is counted in
``ssd_signals_received_total{signal}``. The handler itself only queues the signal (it runs
between two bytecodes of the main thread, which serves HTTP); a thread of its own does the
work, so a reload never holds up /metrics.
"""

from __future__ import annotations

import faulthandler
import logging
import queue
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

log = logging.getLogger("ssdfleet")

IGNORED = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
QUIT_EXIT_STATUS = 128 + signal.SIGQUIT


class SignalHandling:
    """Installs the handlers (main thread only) and runs the thread that acts on them.

    ``reload()`` is called for SIGHUP (several SIGHUPs queued while a reload runs make one
    more reload); ``stop(signum)`` for SIGQUIT, after the stacks are written; ``note(name)``
    counts a signal that did not stop the agent."""

    LOG_EVERY = 60.0

    def __init__(self, reload: Callable[[], Any], stop: Callable[[int], None],
                 note: Callable[[str], None]) -> None:
        self._reload = reload
        self._stop = stop
        self._note = note
        self._queue: queue.SimpleQueue[int] = queue.SimpleQueue()  # put() is safe in a handler
        self._logged: Dict[int, float] = {}
        self._thread: Optional[threading.Thread] = None

    def install(self) -> None:
        for sig in (signal.SIGHUP, signal.SIGQUIT) + IGNORED:
            signal.signal(sig, self._on_signal)
        # The stacks are written by faulthandler in C, before the Python handler runs, so they
        # come out even when the interpreter is wedged; chain=True then runs ours.
        try:
            faulthandler.register(signal.SIGQUIT, file=sys.stderr, all_threads=True, chain=True)
        except (AttributeError, RuntimeError, ValueError, OSError) as exc:  # no usable stderr
            log.debug("no stack dump on SIGQUIT: %s", exc)
        self._thread = threading.Thread(target=self._run, name="signals", daemon=True)
        self._thread.start()

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._queue.put(signum)

    def _run(self) -> None:
        while True:
            pending: List[int] = [self._queue.get()]
            while True:  # whatever else arrived meanwhile, handled in one go
                try:
                    pending.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._handle(pending)
            except Exception:  # the thread must outlive a bug in one reload
                log.exception("handling signals %s failed", [signal.Signals(s).name for s in pending])

    def _handle(self, pending: List[int]) -> None:
        if signal.SIGQUIT in pending:
            log.warning("SIGQUIT: the stack of every thread is written above; stopping as for SIGTERM "
                        "(exit status %d)", QUIT_EXIT_STATUS)
            self._stop(signal.SIGQUIT)
            return
        for signum in pending:
            self._note(signal.Signals(signum).name)
            if signum in IGNORED:
                self._ignored(signum)
        if signal.SIGHUP in pending:
            self._reload()

    def _ignored(self, signum: int) -> None:
        now = time.monotonic()
        if now - self._logged.get(signum, -self.LOG_EVERY) >= self.LOG_EVERY:
            self._logged[signum] = now
            log.warning("%s received and ignored: it has no meaning for ssdfleet (SIGHUP reloads the "
                        "configuration, SIGTERM stops); logged at most once a minute",
                        signal.Signals(signum).name)
