"""The simulated host's clock, for programs that decide what to run next from how far the run has
come: a serving loop admitting the requests that have arrived, a dispatcher choosing between
streams. time.perf_counter() and time.sleep() measure the machine the simulator runs on; these
read and spend simulated time on the current rank's host.

    import syntorch, syntorch.clock
    import syntorch.torch as torch

    syntorch.init()
    while syntorch.clock.now() < 0.010:      # simulated seconds from the run's start
        step()                               # launches work; the host runs ahead of the device
        torch.cuda.synchronize()             # the host waits for it

Reading the clock makes the program wait for the simulator to reach that point of it, so the
same program and inputs give the same readings, and the same run, every time. Outside a run,
and while a CUDA graph is being captured, the clock raises RuntimeError.
"""

import _syntorch

__all__ = ["now", "sleep", "sleep_until"]


def now():
    """Seconds on this rank's simulated host clock since the run started."""
    return _syntorch.clock_now_s()


def sleep(seconds):
    """The host idles for `seconds` (a number >= 0) of simulated time."""
    _syntorch.clock_sleep_s(float(seconds))


def sleep_until(time_s):
    """The host idles until its clock reads `time_s` (at once if that has passed)."""
    _syntorch.clock_sleep_until_s(float(time_s))
