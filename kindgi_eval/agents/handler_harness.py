"""What runs inside the sandbox: load the tenant's handler module, call its entrypoint, print its answer as JSON.

Never imported by the package: the sandbox mounts this file read-only beside the handler and runs it with the bare
interpreter (`python -I -S`), so it imports the standard library only. Its arguments are the module's path and the
entrypoint's dotted name; the case and the reply come on standard input as `{"case", "reply"}`. The entrypoint's own
prints go to standard error, so only the answer is on standard output. Everything it prints is read outside as
untrusted (the handler runs in this process and may change anything here): the exit statuses only label an error.
"""

import importlib.util
import json
import sys
import traceback

MEMORY_EXIT = 3  # spec.MEMORY_EXIT
RAISED_EXIT = 4  # spec.RAISED_EXIT


def main() -> int:
    module_path, entrypoint = sys.argv[1], sys.argv[2]
    payload = json.loads(sys.stdin.read())
    answer_to = sys.stdout
    sys.stdout = sys.stderr
    try:
        spec = importlib.util.spec_from_file_location("handler", module_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        target = module
        for part in entrypoint.split("."):
            target = getattr(target, part)
        answer = target(payload["case"], payload["reply"])
        text = json.dumps(answer, allow_nan=False)
    except MemoryError:
        print("MemoryError", file=sys.stderr)
        return MEMORY_EXIT
    except BaseException as e:  # noqa: BLE001 (whatever the handler raised, SystemExit included, is its crash)
        traceback.print_exc(file=sys.stderr)
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return RAISED_EXIT
    answer_to.write(text)
    answer_to.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
