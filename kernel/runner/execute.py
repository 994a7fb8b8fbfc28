"""Execute one Jupyter notebook for gomase's `mase labs` (kernel/runner).

Usage: python3 execute.py IN.ipynb OUT.ipynb KERNEL TIMEOUT_S WORKDIR
       python3 execute.py --check KERNEL

Runs the cells in order with nbclient, stops at the first failing cell (a
cell tagged "raises-exception" may fail), and always writes the executed,
possibly partial, notebook to OUT. Progress lines go to stderr; the last
stdout line is a JSON status: {"status": "ok" | "cell_error" | "timeout" |
"dead_kernel" | "error", "cell": 1-based index or 0, "message": text}.
SIGTERM or SIGINT while the kernel runs shuts it down (nbclient's handlers);
mase labs sends SIGTERM when it is stopped, and starts this script so that it
gets SIGTERM when mase labs dies (PR_SET_PDEATHSIG).
With --check it prints the kernelspec as JSON, or exits 3 if it is missing.
"""
import json
import signal
import sys
import time


def say(text, stream):
    """Writes a line; a reader that went away (mase labs was killed) is ignored."""
    try:
        print(text, file=stream, flush=True)
    except (OSError, ValueError):
        pass


def check(kernel):
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    try:
        spec = KernelSpecManager().get_kernel_spec(kernel)
    except NoSuchKernel:
        print(json.dumps({"missing": kernel}))
        sys.exit(3)
    print(json.dumps({"resource_dir": spec.resource_dir, "argv": spec.argv, "env": spec.env}))


def main(src, dst, kernel, timeout, workdir):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    try:
        nb = nbformat.read(src, as_version=4)
    except Exception as e:  # mase labs checks the file first; this is a backstop
        say(json.dumps({"status": "error", "cell": 0, "message": "reading %s: %s: %s" % (src, type(e).__name__, e)}), sys.stdout)
        return
    current = {"cell": 0, "start": time.time()}
    total = len(nb.cells)

    def on_start(cell, cell_index, **kw):
        current["cell"] = cell_index + 1

    def on_execute(cell, cell_index, **kw):
        current["start"] = time.time()
        say("cell %d/%d running" % (cell_index + 1, total), sys.stderr)

    def on_executed(cell, cell_index, **kw):
        say("cell %d/%d done in %.1fs" % (cell_index + 1, total, time.time() - current["start"]), sys.stderr)

    client = NotebookClient(
        nb, timeout=timeout, startup_timeout=120, kernel_name=kernel,
        allow_errors=False, record_timing=True,
        resources={"metadata": {"path": workdir}},
        on_cell_start=on_start, on_cell_execute=on_execute, on_cell_executed=on_executed)
    result = {"status": "ok", "cell": 0, "message": ""}
    try:
        client.execute()
    except CellExecutionError as e:
        result = {"status": "cell_error", "cell": current["cell"], "message": str(e)}
    except CellTimeoutError as e:
        result = {"status": "timeout", "cell": current["cell"], "message": str(e)}
    except DeadKernelError as e:
        result = {"status": "dead_kernel", "cell": current["cell"], "message": str(e)}
    except Exception as e:  # kernel start-up failures and the like
        result = {"status": "error", "cell": current["cell"], "message": "%s: %s" % (type(e).__name__, e)}
    finally:
        # The notebook is written whole: a stop signal now waits (mase labs
        # kills this process if it takes too long).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # Marks the file as written by mase labs, which may replace it on a later run.
        nb.metadata["gomase"] = {"executed_by": "mase labs"}
        nbformat.write(nb, dst)
    say(json.dumps(result), sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    elif len(sys.argv) == 6:
        main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
