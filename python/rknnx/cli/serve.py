"""``rknnx serve MODEL... [--sample NAME] [--host] [--port] [--workers N]``: serve models
over HTTP with the KServe v2 / Triton inference protocol, one pool per model (weights once,
every NPU core), until SIGINT/SIGTERM.

MODEL is a .rknn file (served under its file name without .rknn) or NAME=FILE.  Clients:
``tritonclient.http``, KServe clients, or plain HTTP (``POST /v2/models/NAME/infer``).
Needs the serve extra: pip install "rknnx[serve]" (aiohttp)."""

from __future__ import annotations

import argparse
import math
import sys

from rknnx.cli._common import UserError, check_model_path, help_text, load_runtime

_MISSING = "rknnx serve needs aiohttp, the serve extra: pip install \"rknnx[serve]\""


def _check_name(name: str) -> None:
    from rknnx._kserve import check_name

    try:
        check_name(name)
    except ValueError as e:
        raise UserError(str(e)) from None


def _sources(args):
    """name -> model source (path or sample bytes), in the order given."""
    items = []
    for spec in args.model:
        name, sep, path = spec.partition("=")
        if not sep:
            path = spec
            base = spec.rsplit("/", 1)[-1]
            name = base[:-5] if base.endswith(".rknn") else base
        _check_name(name)
        check_model_path(path)
        items.append((name, path))
    if args.sample:
        from rknnx.emulator import samples

        info = load_runtime()
        for sample in args.sample:
            maker = samples.ALL.get(sample)
            if maker is None:
                raise UserError(f"no sample {sample!r}; the samples are "
                                f"{', '.join(sorted(samples.ALL))}")
            items.append((sample, maker(target=info.get("platform") or "RK3588")))
    if not items:
        raise UserError("give at least one MODEL file (or --sample NAME)")
    names = [n for n, _ in items]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UserError(f"model name(s) {', '.join(dup)} given twice; name them NAME=FILE")
    return dict(items)


def run(args) -> int:
    sources = _sources(args)
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise UserError(_MISSING) from None
    from rknnx.serve import Server

    load_runtime()
    try:
        server = Server(sources, host=args.host, port=args.port, workers=args.workers,
                        queue=args.queue, shutdown_timeout=args.shutdown_timeout,
                        body_timeout=args.body_timeout,
                        max_request_bytes=None if args.max_request_mb is None
                        else max(1, int(args.max_request_mb * (1 << 20))))
    except ValueError as e:
        raise UserError(str(e)) from None

    def ready():
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            print(f"rknnx serve: listening on {args.host}: anyone who reaches this port can "
                  f"run the models (there is no authentication)", file=sys.stderr)
        for line in server.describe():
            print(f"  {line}")
        print(f"rknnx serve: listening on {server.url} (KServe v2); Ctrl-C stops", flush=True)

    try:
        server.run(on_ready=ready)
    except OSError as e:
        raise UserError(f"cannot listen on {args.host}:{args.port} ({e.strerror or e})") \
            from None
    print("rknnx serve: stopped", flush=True)
    return 0


def _int_in(low: int, high: int = None):
    """An argparse type: an int in low..high (argparse's one-line error and exit status 2
    otherwise)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}") from None
        if value < low or (high is not None and value > high):
            want = f"{low}..{high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"must be {want}; got {text}")
        return value
    return parse


def _seconds(*, zero: bool):
    """An argparse type: a finite number of seconds, > 0 (>= 0 when `zero`)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of seconds; got {text!r}") \
                from None
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>=' if zero else '>'}"
                                             f" 0; got {text}")
        return value
    return parse


def _megabytes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of MiB; got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0; got {text}")
    return value


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serve models over HTTP (KServe v2 / Triton protocol)",
                       description=help_text(__doc__))
    p.add_argument("model", nargs="*", metavar="MODEL",
                   help="a .rknn file, or NAME=FILE (served as NAME)")
    p.add_argument("--sample", action="append", metavar="NAME",
                   help="serve a sample model of the emulator, named NAME (repeatable)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; "
                        "0.0.0.0 for every interface)")
    p.add_argument("--port", type=_int_in(0, 65535), default=8000,
                   help="TCP port, 0..65535 (default 8000; 0: any)")
    p.add_argument("--workers", type=_int_in(1), metavar="N",
                   help="pool workers per model (default: one per NPU core, at least 2)")
    p.add_argument("--queue", type=_int_in(0), default=32, metavar="N",
                   help="requests waiting per model beyond those running; more get 503 "
                        "(default 32)")
    p.add_argument("--max-request-mb", type=_megabytes, metavar="MB",
                   help="largest request body, > 0 (default: 8x a model's inputs at "
                        "float32, at least 1 MiB)")
    p.add_argument("--shutdown-timeout", type=_seconds(zero=True), default=30.0, metavar="S",
                   help="seconds the drain on SIGINT/SIGTERM may last: requests in flight "
                        "finish, the others get 503 (default 30)")
    p.add_argument("--body-timeout", type=_seconds(zero=False), default=30.0, metavar="S",
                   help="seconds a request's body may take to arrive (default 30; 408 "
                        "after)")
    p.set_defaults(func=run)
