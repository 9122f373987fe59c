"""A Context being created claims what it reads during rknn_init (the GIL released): the
weights of the context it shares them with and the NPU memory holding its model.  A close()
of those in another thread meanwhile refuses instead of freeing them under the runtime."""

from __future__ import annotations

from helpers import probe


def test_model_mem_cannot_be_closed_while_a_context_is_made_from_it():
    out = probe("""
        data = samples.classifier()
        outcomes = set()
        for _ in range(30):
            mm = C.create_mem2(len(data))
            np.asarray(mm)[:] = np.frombuffer(data, np.uint8)
            res = {}
            t = threading.Thread(target=lambda: res.setdefault("ctx", C.Context(model_mem=mm)))
            t.start()
            closed = False
            while t.is_alive():
                try:
                    mm.close()
                    closed = True
                    break
                except (BufferError, ValueError):
                    pass
            t.join()
            ctx = res.get("ctx")
            # never both: an open context on a destroyed model buffer
            assert not (closed and ctx is not None and not ctx.closed), (closed, ctx, mm)
            outcomes.add("context" if ctx is not None else "closed")
            if ctx is not None:
                ctx.close()
            mm.close()
        print(sorted(outcomes))
    """)
    assert "context" in out


def test_weights_source_cannot_be_closed_while_a_borrower_is_made():
    out = probe("""
        data = samples.classifier()
        made = 0
        for _ in range(30):
            src = C.Context(data)
            res = {}

            def make():
                try:
                    res["ctx"] = C.Context(data, share_weights_with=src)
                except Exception as e:
                    res["err"] = e
            t = threading.Thread(target=make)
            t.start()
            closed = False
            while t.is_alive():
                try:
                    src.close()
                    closed = True
                    break
                except (RuntimeError, ValueError):
                    pass
            t.join()
            ctx = res.get("ctx")
            assert not (closed and ctx is not None and not ctx.closed), (closed, ctx, res)
            # the runtime is never handed a context destroyed under it (on a board that is
            # a use after free; the emulator says RKNN_ERR_CTX_INVALID)
            assert not isinstance(res.get("err"), rknnx.errors.ContextInvalidError), res
            if ctx is not None:
                made += 1
                ctx.close()
            src.close()
        print("made", made)
    """)
    assert out.startswith("made ")
